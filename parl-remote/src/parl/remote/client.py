"""The client inside the user's process: the master handshake, heartbeats, actor creation and
the per-actor channel that carries calls straight to the actor's job process.

The link to the master is control only: a stalled or restarted master costs no actor, because
calls never pass through it. The heartbeat thread says hello again to a master that forgot
this client, and keeps released actors in every heartbeat until the master confirms them.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import pickle
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from parl.remote import protocol as P
from parl.remote.config import Limits, Timeouts
from parl.remote.exceptions import (
    ActorDiedError,
    AuthenticationError,
    CallTimeoutError,
    ConnectError,
    DeserializeError,
    MasterLostError,
    MemoryLimitError,
    RemoteAttributeError,
    RemoteError,
    RemoteTraceback,
    ResourceError,
    SerializeError,
    VersionMismatchError,
    as_remote,
)
from parl.remote.files import collect_files, pack_files
from parl.remote.framework import client_framework
from parl.remote.security import SECRET_ENV, Mode, Security
from parl.remote.serialization import dumps, payload_size

import zmq

if TYPE_CHECKING:
    from parl.remote.backends import Backend
    from parl.remote.cluster import LocalCluster

__all__ = [
    "ActorChannel",
    "Client",
    "connect",
    "connect_xparl",
    "current_backend",
    "disconnect",
    "disconnect_xparl",
    "get_client",
    "get_global_client",
]

logger = logging.getLogger("parl.remote.client")

_POLL_SLICE_MS = 100
_DISCONNECT_GRACE_MS = 100
_MAX_REPLY_FRAMES = 1 << 16
_MAX_RELEASES_PER_BEAT = 1024
_CHANNEL_EVENTS = zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED | P.HANDSHAKE_FAILED
# How long close() waits for other threads to close the sockets they are using (they notice
# within a poll slice) before it leaves the context to the process's exit.
_CLOSE_WAIT_S = 2.0

_exiting = False  # set when the interpreter's exit disconnects this process
# Contexts whose sockets another thread still used at close: never terminated (that would hang
# or pull the sockets from under that thread) and kept referenced, so that pyzmq does not
# destroy them (closing those sockets from the collecting thread) before the process ends.
_abandoned_contexts: list[zmq.Context] = []


def _exit_quietly() -> None:
    """Stop here, for good, a daemon thread whose work the interpreter's exit cut short.

    Python stops daemon threads silently at exit; raising the disconnection into the user's
    daemon thread instead would print its traceback on every such exit. Any other thread (the
    main thread, in an ``atexit`` handler or after ``parl.remote.disconnect()``) gets the error.
    """
    if _exiting and threading.current_thread().daemon:
        threading.Event().wait()


def _validate_address(address: str) -> str:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"address {address!r} is not of the form HOST:PORT (for example 127.0.0.1:6006); "
            "pass the address `xparl start` printed, or call parl.connect() with no address to "
            "start a local cluster"
        )
    return address


def _secret_hint(address: str) -> str:
    return (
        f"On the machine that started the cluster at {address}, `xparl start` keeps its secret "
        "in an owner-only file it printed; copy it here and pass parl.connect(..., "
        f"secret_file=FILE) or set {SECRET_ENV}. Only a cluster started with --insecure takes "
        "parl.connect(..., insecure=True)."
    )


class _JobUnreachable(Exception):
    """A granted job could not be reached or failed to prove it belongs to the cluster."""


class Client:
    """A connection to an xparl master (one per process; see :func:`connect`).

    Args:
        address: ``host:port`` of the master.
        distributed_files: Extra files for every job (see :mod:`parl.remote.files`).
        timeouts: Timeouts of this client.
        security: The cluster secret to use (default: found for ``address``, see
            :func:`parl.remote.cluster.find_security`); ``Security(None)`` connects without
            authentication, to a cluster started with ``--insecure`` only.
    """

    def __init__(
        self,
        address: str,
        distributed_files: Sequence[str] | None,
        timeouts: Timeouts,
        security: Security | None = None,
    ) -> None:
        self.address = _validate_address(address)
        if security is None:
            from parl.remote.cluster import find_security

            security = find_security(address)
        self.security = security
        self.limits = Limits()
        self.distributed_files = list(distributed_files or [])
        files = collect_files(self.distributed_files)
        self.files_frames = list(pack_files(files))
        self.shipped_files = set(files)
        self.timeouts = timeouts
        self.client_id = uuid.uuid4().hex
        self.pid = os.getpid()
        self.context = zmq.Context()
        self.master_lost: str | None = None
        self.epoch = 0  # bumped whenever a restarted master had to be told about this client
        self.dead_jobs: dict[str, tuple[str, str]] = {}
        self.channels: weakref.WeakSet[ActorChannel] = weakref.WeakSet()
        self.cluster: LocalCluster | None = None
        self._local = threading.local()
        # The sockets to the master, one per thread (see _master_link), those of them a thread
        # is using now, and the actor channels whose sockets are open: a socket is closed only
        # by the thread that uses it, or by close() when no thread does.
        self._sockets: list[zmq.Socket] = []
        self._busy: set[zmq.Socket] = set()
        self._live_channels: weakref.WeakSet[ActorChannel] = weakref.WeakSet()
        self._sockets_lock = threading.Lock()
        self._releases: set[str] = set()
        self._wake_r, self._wake_w = os.pipe()
        self._closed = threading.Event()
        self._wake_lock = threading.Lock()
        self._heartbeat, self._heartbeat_watch = self._dial_master()
        try:
            self._handshake()
        except BaseException:
            self._heartbeat_watch.close(self._heartbeat)
            self._heartbeat.close()
            self.context.term()
            raise
        self._thread = threading.Thread(target=self._beat, name="xparl-client", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ master link
    def _hello(self) -> dict[str, Any]:
        main = sys.modules.get("__main__")
        script = os.path.abspath(getattr(main, "__file__", "") or "<interactive>")
        return {
            **P.identity(),
            "client_id": self.client_id,
            "script": script[-4096:],
            "actors": len(self.channels),
        }

    def _handshake(self) -> None:
        hello = [P.HELLO, P.encode(self._hello())]
        try:
            tag, reply = P.ask(
                self._heartbeat, self._heartbeat_watch, hello, self.timeouts.connect_timeout
            )
        except P.NoAnswer as exc:
            if exc.problem is not None:
                raise AuthenticationError(
                    f"the master at {self.address} refused this client: {exc.problem}. "
                    f"{_secret_hint(self.address)}"
                ) from None
            raise ConnectError(
                f"no xparl master answered at {self.address} within "
                f"{self.timeouts.connect_timeout:g} s (nothing listens there, or a firewall "
                "drops the connection). Start a cluster with `xparl start --port PORT`, check "
                "the address, or call parl.connect() with no address for a local cluster."
            ) from None
        if tag != P.ACK:
            if reply.get("kind") == "version":
                raise VersionMismatchError(reply.get("message"))
            raise ConnectError(f"the master at {self.address} refused the client: {reply}")
        self._check_mode(reply.get("mode"))
        self.master_info = reply

    def _check_mode(self, mode: object) -> None:
        """Refuse a master whose security is not what this client asked for, before anything
        of the user's (class, arguments, files) is sent or anything of the master's unpickled.
        """
        insecure_master = mode == Mode.INSECURE.value
        if insecure_master == (self.security.secret is None):
            return
        if insecure_master:
            raise AuthenticationError(
                f"the master at {self.address} runs without authentication (--insecure); this "
                "client sent it nothing. Connect to an insecure cluster only on purpose: "
                "parl.connect(address, insecure=True)."
            )
        raise AuthenticationError(
            f"the master at {self.address} requires the cluster secret (mode {mode!r}) but this "
            f"client asked for insecure=True. {_secret_hint(self.address)}"
        )

    def _beat(self) -> None:
        interval = self.timeouts.heartbeat_interval
        last_beat = 0.0
        last_ack = last_loop = time.monotonic()
        redialed = False
        while not self._closed.is_set():
            poller = zmq.Poller()
            poller.register(self._heartbeat, zmq.POLLIN)
            poller.register(self._wake_r, zmq.POLLIN)
            events = dict(poller.poll(int(interval * 1000)))
            woken = self._wake_r in events
            if woken:
                os.read(self._wake_r, 4096)
            self._heartbeat_watch.drain()
            if self._heartbeat in events and self._read_master():
                last_ack = time.monotonic()
            now = time.monotonic()
            if now - last_loop > self.timeouts.heartbeat_timeout / 2:
                last_ack = now  # this process was stalled: give the master a new window
            last_loop = now
            if woken or now - last_beat >= interval:
                self._send_beat()
                last_beat = now
            silent = now - last_ack
            if silent > self.timeouts.heartbeat_timeout / 2 and not redialed:
                # A silent link may be a broken connection rather than a dead master: redial.
                self._heartbeat_watch.close(self._heartbeat)
                self._heartbeat.close(linger=0)
                self._heartbeat, self._heartbeat_watch = self._dial_master()
                redialed = True
            if silent <= interval * 2:
                redialed = False
            if silent > self.timeouts.heartbeat_timeout and self.master_lost is None:
                self.master_lost = (
                    f"the master at {self.address} stopped answering (no reply for "
                    f"{silent:.1f} s; heartbeat timeout {self.timeouts.heartbeat_timeout:g} s)"
                )
                logger.warning("%s; actors keep serving, creating actors fails", self.master_lost)
        self._send_beat()
        self._send_heartbeat_socket(P.GOODBYE, {"client_id": self.client_id})
        self._heartbeat_watch.close(self._heartbeat)
        self._heartbeat.close(linger=200)

    def _read_master(self) -> bool:
        """Handle what the master sent; True if anything came."""
        heard = False
        while True:
            try:
                frames = P.recv_bounded(self._heartbeat, 2)
            except zmq.Again:
                return heard
            try:
                if not frames or len(frames) != 2:
                    raise P.BadMessage("a master message has a tag and one JSON frame")
                self._on_master(frames[0], P.decode(frames[1]))
            except P.BadMessage as exc:
                logger.warning("dropped a malformed message from the master (%s)", exc)
                continue
            heard = True

    def _on_master(self, tag: bytes, reply: dict[str, Any]) -> None:
        if self.master_lost is not None:
            logger.warning("the master at %s answers again", self.address)
            self.master_lost = None
        if tag == P.ACK and "master" in reply:
            self.epoch += 1  # a master that had forgotten this client knows it again
        elif tag == P.ACK:
            released = reply.get("released")
            if isinstance(released, list):
                with self._wake_lock:
                    self._releases.difference_update(str(r) for r in released)
        elif tag == P.ACTOR_DIED:
            self.dead_jobs[str(reply.get("job_id"))] = (
                str(reply.get("reason")),
                str(reply.get("message")),
            )
        elif tag == P.ERROR and reply.get("kind") == "unknown_client":
            # A restarted master: say hello again; requests in flight go again after its answer.
            self._send_heartbeat_socket(P.HELLO, self._hello())
        elif tag == P.ERROR:
            logger.warning("the master at %s: %s", self.address, reply.get("message"))

    def _send_beat(self) -> None:
        with self._wake_lock:
            releases = sorted(self._releases)[:_MAX_RELEASES_PER_BEAT]
        beat = {"client_id": self.client_id, "actors": len(self.channels), "releases": releases}
        self._send_heartbeat_socket(P.CLIENT_HEARTBEAT, beat)

    def _dial_master(self) -> tuple[zmq.Socket, P.Watch]:
        label = f"the master at {self.address} refused this client"
        return P.dial(self.context, self.address, self.security, label, logger)

    def _send_heartbeat_socket(self, tag: bytes, payload: dict[str, Any]) -> None:
        with contextlib.suppress(zmq.ZMQError):
            self._heartbeat.send_multipart([tag, P.encode(payload)], zmq.NOBLOCK)

    def _disconnected(self) -> ConnectError:
        return ConnectError("this client was disconnected; call parl.connect(...) again")

    @contextlib.contextmanager
    def _master_link(self) -> Iterator[zmq.Socket]:
        """This thread's socket to the master, marked in use while the block runs: close()
        leaves a socket in use to its thread, which closes it on leaving the block."""
        with self._sockets_lock:
            if self._closed.is_set():
                raise self._disconnected()
            sock = getattr(self._local, "socket", None)
            if sock is None or sock.closed:
                sock = self.context.socket(zmq.DEALER)
                sock.linger = 0
                P.bound_inbound(sock, P.CONTROL_MAX_BYTES)
                self.security.dial_control(sock)
                sock.connect(f"tcp://{self.address}")
                self._local.socket = sock
                self._sockets.append(sock)
            self._busy.add(sock)
        try:
            yield sock
        finally:
            with self._sockets_lock:
                self._busy.discard(sock)
                if self._closed.is_set() and not sock.closed:
                    sock.close(linger=0)
                    self._sockets.remove(sock)

    def notify(self, tag: bytes, payload: dict[str, Any]) -> None:
        """Send the master a control message that needs no answer."""
        message = P.encode({"client_id": self.client_id, **payload})
        with contextlib.suppress(zmq.ZMQError, ConnectError), self._master_link() as sock:
            sock.send_multipart([tag, message], zmq.NOBLOCK)

    def request(self, tag: bytes, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send a control request to the master and wait for its answer (bounded).

        A master that restarts meanwhile gets the request again once this client said hello.
        A request this client stops waiting for (timeout, lost master, an error, an interrupt)
        is cancelled, so the master takes back what it may grant it later.
        """
        self.check_master()
        request_id = uuid.uuid4().hex
        body = {**payload, "client_id": self.client_id, "request_id": request_id}
        message = [tag, P.encode(body)]
        try:
            with self._master_link() as sock:
                sock.send_multipart(message)
                try:
                    answer, reply = self._await_reply(sock, message, request_id, timeout)
                except BaseException:
                    cancel = {"client_id": self.client_id, "request_id": request_id}
                    with contextlib.suppress(zmq.ZMQError):
                        sock.send_multipart([P.CANCEL_REQUEST, P.encode(cancel)], zmq.NOBLOCK)
                    raise
        except ConnectError:
            if self._closed.is_set():
                _exit_quietly()  # this thread's socket is closed by now
            raise
        if answer == P.ERROR:
            if reply.get("kind") in ("resource", "busy"):
                raise ResourceError(reply.get("message"))
            raise RemoteError(f"the master refused the request: {reply.get('message')}")
        return reply

    def _await_reply(
        self, sock: zmq.Socket, message: list[bytes], request_id: str, timeout: float
    ) -> tuple[bytes, dict[str, Any]]:
        """The tag and payload of the master's answer to ``request_id``."""
        epoch = self.epoch
        deadline = time.monotonic() + timeout
        while True:
            if sock.poll(_POLL_SLICE_MS):
                frames = P.recv_bounded(sock, 2)
                try:
                    if not frames or len(frames) != 2:
                        raise P.BadMessage("a master message has a tag and one JSON frame")
                    reply = P.decode(frames[1])
                except P.BadMessage:
                    continue
                if reply.get("request_id") != request_id:
                    continue  # the answer to a request given up on (and cancelled)
                if frames[0] == P.ERROR and reply.get("kind") == "unknown_client":
                    continue  # the heartbeat thread says hello; then this is sent again
                return frames[0], reply
            if self.epoch != epoch:
                epoch = self.epoch
                sock.send_multipart(message)
            if self._closed.is_set():
                raise self._disconnected()
            self.check_master()
            if time.monotonic() > deadline:
                raise ConnectError(
                    f"the master at {self.address} did not answer within {timeout:g} s"
                )

    def check_master(self) -> None:
        """Raise MasterLostError if the master is not answering, ConnectError if disconnected."""
        if self._closed.is_set():
            _exit_quietly()
            raise self._disconnected()
        if self.master_lost is not None:
            raise MasterLostError(
                f"{self.master_lost}. Existing actors keep working; creating actors works again "
                "once the master answers (a stalled master resumes; a restarted one must use the "
                "same port and secret)."
            )

    # ------------------------------------------------------------------ actors
    def create_actor(
        self,
        class_frames: list[Any],
        class_name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        n_gpu: int,
        max_memory: float | None,
        call_timeout: float | None = None,
    ) -> ActorChannel:
        """Reserve a job, check it belongs to the cluster, send it the class and arguments.

        A granted job that cannot be reached (its worker just died) or that fails to prove
        its membership is reported to the master and another one is requested, within
        the resource timeout.
        """
        arg_frames = dumps((args, kwargs), f"the arguments of {class_name}()")
        spec = {
            "class_name": class_name,
            "client_id": self.client_id,
            "max_memory": max_memory,
            "max_message_bytes": self.limits.max_message_bytes,
            "framework": client_framework(),
        }
        deadline = time.monotonic() + self.timeouts.resource_timeout
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            grant = self.request(
                P.REQUEST_ACTOR,
                {"n_gpu": n_gpu, "timeout": remaining},
                remaining + self.timeouts.heartbeat_timeout,
            )
            channel = ActorChannel(self, grant, class_name, call_timeout)
            try:
                channel.verify()
                init = [P.encode({**spec, "gpus": grant["gpus"]}), *self.files_frames]
                reply = channel.request(
                    P.OP_INIT, [*init, *class_frames, *arg_frames], f"{class_name}()"
                )
                channel.shadowed = _shadowed(reply)
                break
            except _JobUnreachable as exc:
                channel.close(notify=False, release=False)
                self.notify(P.JOB_FAILED, {"job_id": channel.job_id, "message": str(exc)})
                if time.monotonic() >= deadline:
                    raise ResourceError(
                        f"no reachable job for {class_name} within the resource timeout; the "
                        f"last one failed: {exc}"
                    ) from None
            except BaseException:
                channel.close(notify=not channel.dead)
                raise
        self.channels.add(channel)
        return channel

    def release_later(self, job_id: str) -> None:
        """Tell the master (from the heartbeat thread, until it confirms) ``job_id`` is released."""
        with self._wake_lock:
            if self._closed.is_set():
                return
            self._releases.add(job_id)
            os.write(self._wake_w, b"r")

    def _open_channel(self, channel: ActorChannel, setup: Callable[[], None]) -> None:
        """Run ``setup`` (which makes ``channel``'s sockets) unless this client is closed, and
        count the channel as open until it closes them."""
        with self._sockets_lock:
            closed = self._closed.is_set()
            if not closed:
                setup()
                self._live_channels.add(channel)
        if closed:
            _exit_quietly()
            raise self._disconnected()

    def _channel_closed(self, channel: ActorChannel) -> None:
        with self._sockets_lock:
            self._live_channels.discard(channel)

    def close(self) -> None:
        """Release every actor of this client and close its sockets.

        Only sockets no thread is using are closed here; a thread inside a call or a request
        notices the close within a poll slice, closes its own socket and raises
        :class:`ActorDiedError` or :class:`ConnectError` (a daemon thread at the interpreter's
        exit stops quietly instead). The context is terminated once every socket is closed;
        if another thread keeps one past ``_CLOSE_WAIT_S``, it is left to the process's exit.
        """
        if self._closed.is_set():
            return
        released = f"this process disconnected from the cluster at {self.address}"
        for channel in list(self.channels):
            channel.close(reason=released)
        with self._wake_lock:
            self._closed.set()
            os.write(self._wake_w, b"q")
        with self._sockets_lock:
            # Channels being created or already dead (not in self.channels), and the master
            # sockets of threads not in a request; no new socket is opened from now on.
            others = list(self._live_channels)
            for sock in [s for s in self._sockets if s not in self._busy]:
                sock.close(linger=0)
                self._sockets.remove(sock)
        for channel in others:
            channel.close(notify=False, reason=released)
        deadline = time.monotonic() + _CLOSE_WAIT_S
        self._thread.join(timeout=_CLOSE_WAIT_S)
        while time.monotonic() < deadline:
            with self._sockets_lock:
                if not self._sockets and not self._live_channels:
                    break
            time.sleep(0.01)
        with self._sockets_lock:
            in_use = len(self._sockets) + len(self._live_channels)
        if in_use or self._thread.is_alive():
            _abandoned_contexts.append(self.context)
            logger.debug("closing the client left %d socket(s) to the threads using them", in_use)
        else:
            self.context.destroy(linger=200)
            with self._wake_lock:
                os.close(self._wake_r)
                os.close(self._wake_w)
        if self.cluster is not None:
            self.cluster.stop()


class ActorChannel:
    """The DEALER socket of one actor: one outstanding request at a time, death noticed fast.

    The socket never reconnects: the job proved itself on this connection (HELLO) and the job
    ends when it closes. libzmq pings the job from its own I/O thread; a job whose process is
    stopped, hung or unreachable drops the connection after the heartbeat timeout. A call waits
    for its reply in slices; between slices it checks the socket monitor (connection gone) and
    the master's death notices (memory limit). So a dead actor becomes
    :class:`ActorDiedError` within about 0.2 s on the same machine and within the heartbeat
    timeout otherwise.
    """

    def __init__(
        self,
        client: Client,
        grant: dict[str, Any],
        class_name: str,
        call_timeout: float | None = None,
    ) -> None:
        self.client = client
        self.job_id = str(grant["job_id"])
        self.address = str(grant["address"])
        self.hostname = str(grant.get("hostname", ""))
        self.pid: int | None = grant.get("pid")
        self.gpus: list[str] = list(grant.get("gpus", []))
        self.max_message_bytes = int(grant["max_message_bytes"])
        self.class_name = class_name
        if call_timeout is None:
            call_timeout = client.timeouts.call_timeout
        self.call_timeout = call_timeout
        self.lock = threading.Lock()
        self.dead: str | None = None
        self.dead_type: type[ActorDiedError] = ActorDiedError
        self.verified = False
        self.initialised = False  # set once INIT succeeded: later failures are the actor's
        self.shadowed: list[str] = []  # instance attributes that shadow a method (from INIT)
        self.peer_gone = False  # the connection to the job dropped
        self.seq = 0
        # Whether a thread is in a request (it alone uses the sockets then), and whether
        # close() came meanwhile (that thread closes the sockets on its way out).
        self._state = threading.Lock()
        self.in_call = False
        self.close_pending = False
        self.disconnected = False  # released because the client closed
        self.mechanism = str(grant.get("mechanism", ""))
        client._open_channel(self, self._open)

    def _open(self) -> None:
        timeouts = self.client.timeouts
        self.socket = self.client.context.socket(zmq.DEALER)
        self.socket.linger = 0
        self.socket.rcvtimeo = _POLL_SLICE_MS
        self.socket.sndtimeo = _POLL_SLICE_MS
        self.socket.reconnect_ivl = -1
        self.socket.heartbeat_ivl = int(timeouts.heartbeat_interval * 1000)
        self.socket.heartbeat_timeout = int(timeouts.heartbeat_timeout * 1000)
        P.bound_inbound(self.socket, self.client.limits.max_message_bytes)
        self.client.security.dial_job(self.socket, self.job_id, self.mechanism)
        self.monitor = self.socket.get_monitor_socket(_CHANNEL_EVENTS)
        self.socket.connect(f"tcp://{self.address}")

    def describe(self) -> str:
        return f"actor {self.class_name} (job {self.job_id} on {self.hostname or self.address})"

    def verify(self) -> None:
        """Check the job holds the cluster secret before sending it anything of the user's."""
        nonce = os.urandom(32)
        try:
            reply = self.request(
                P.OP_HELLO, [nonce], "the job's handshake", self.client.timeouts.connect_timeout
            )
        except (ActorDiedError, CallTimeoutError) as exc:
            raise _JobUnreachable(f"job {self.job_id} at {self.address}: {exc}") from None
        except RemoteError as exc:
            raise _JobUnreachable(f"job {self.job_id} at {self.address} refused: {exc}") from None
        proof = bytes(reply[0]) if reply else b""
        if not self.client.security.check_job_proof(self.job_id, nonce, proof):
            raise _JobUnreachable(
                f"the process at {self.address} failed to prove it is job {self.job_id} of the "
                "cluster (it does not hold the cluster secret)"
            )
        self.verified = True

    def request(
        self,
        op: bytes,
        frames: list[Any],
        what: str,
        timeout: float | None = None,
        name: str = "",
    ) -> list[Any]:
        """Send one request (on attribute ``name`` for a call, read or write) and return the
        reply's payload frames; raise the remote error if any."""
        size = payload_size(frames)
        if size > self.max_message_bytes:
            raise SerializeError(
                f"{what}: the message is {size / 2**20:.1f} MiB, more than the "
                f"{self.max_message_bytes / 2**20:g} MiB the actor accepts (XPARL_MAX_MESSAGE_MB "
                "where the cluster runs); send less per call"
            )
        timeout = self.call_timeout if timeout is None else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self.lock:
                with self._state:
                    if self.dead is not None:
                        raise self.dead_type(self.dead)
                    self.in_call = True
                try:
                    return self._exchange(op, frames, what, deadline, name)
                finally:
                    with self._state:
                        self.in_call = False
                        if self.close_pending:
                            self._close_sockets()  # close() came from another thread meanwhile
        except ActorDiedError:
            if self.disconnected:
                _exit_quietly()
            raise

    def _exchange(
        self, op: bytes, frames: list[Any], what: str, deadline: float | None, name: str
    ) -> list[Any]:
        self.seq += 1
        self._send(P.request_frames(self.seq, op, name, frames), what, deadline)
        while True:
            try:
                reply = P.recv_message(self.socket, _MAX_REPLY_FRAMES)
            except zmq.Again:
                self._check_alive(what, deadline)
                continue
            if reply is None:
                continue
            try:
                seq, status, payload = P.parse_reply(reply[0], reply[1:])
            except P.BadMessage:
                continue
            if status == P.REPLY_DIED and payload:
                self._died(_death_notice(payload[0], self.describe()))
                raise self.dead_type(self.dead)
            if int.from_bytes(seq, "little") != self.seq:
                continue  # the late answer of a call that timed out
            if status == P.REPLY_OK:
                self.initialised = self.initialised or op == P.OP_INIT
                return payload
            raise_remote_error(payload, what, self)

    def _send(self, frames: list[Any], what: str, deadline: float | None) -> None:
        while True:
            try:
                P.send_message(self.socket, frames)
                return
            except zmq.Again:
                self._check_alive(what, deadline)

    def _check_alive(self, what: str, deadline: float | None) -> None:
        if self.close_pending and self.dead is not None:
            raise self.dead_type(f"{self.dead} while {what} ran")
        problem = None
        disconnected = False
        while (event := P.monitor_event(self.monitor)) is not None:
            if event[0] & P.HANDSHAKE_FAILED:
                problem = P.handshake_problem(*event)
            disconnected = True
        notice = self.client.dead_jobs.get(self.job_id)
        if notice is not None:
            self._died({"reason": notice[0], "message": notice[1]})
        elif problem is not None:
            self._died({"reason": "refused", "message": f"{self.describe()} refused: {problem}"})
        elif disconnected or self.peer_gone:
            # A job may answer and then exit (a failed constructor): read what it sent first.
            self.peer_gone = True
            if self.socket.poll(_DISCONNECT_GRACE_MS):
                return
            if self.dead is None:
                self._died(
                    {
                        "reason": "exited",
                        "message": (
                            f"{self.describe()} died while running {what}: its process exited, "
                            "was killed, or stopped answering heartbeats for "
                            f"{self.client.timeouts.heartbeat_timeout:g} s (stopped, hung, or its "
                            f"machine unreachable). Its log: `xparl logs {self.job_id}`. Create a "
                            "new actor to go on."
                        ),
                    }
                )
        if self.dead is not None:
            raise self.dead_type(self.dead)
        if deadline is not None and time.monotonic() > deadline:
            raise CallTimeoutError(
                f"{what} on {self.describe()} did not finish within its call_timeout; the actor "
                "keeps running it and a later call waits behind it. `del actor` releases it."
            )

    def _died(self, info: dict[str, Any]) -> None:
        self.dead = str(info.get("message") or f"{self.describe()} died")
        if info.get("reason") == "max_memory":
            self.dead_type = MemoryLimitError
        self.client.channels.discard(self)
        if self.verified:  # an unverified job is reported as failed by create_actor
            self.client.release_later(self.job_id)

    def close(self, notify: bool = True, release: bool = True, reason: str = "") -> None:
        """Release the actor: its job exits and its CPU returns to the pool at once.

        A thread in a call on this actor keeps the socket: it closes it itself within a poll
        slice and raises :class:`ActorDiedError` (``reason`` says why the actor was released).
        """
        with self._state:
            if self.socket.closed or self.close_pending:
                return
            if not self.in_call and self.dead is None and notify and self.verified:
                with contextlib.suppress(zmq.ZMQError):
                    P.send_message(self.socket, P.request_frames(0, P.OP_RELEASE), zmq.NOBLOCK)
            if reason:
                self.disconnected = True
            if self.dead is None:
                self.dead = f"{self.describe()} was released" + (f": {reason}" if reason else "")
            self.client.channels.discard(self)
            if release:
                self.client.release_later(self.job_id)
            if self.in_call:
                self.close_pending = True  # the thread in the call closes them
            else:
                self._close_sockets()

    def _close_sockets(self) -> None:
        """Close the sockets (holding ``self._state``, no thread in a call: none uses them)."""
        if self.socket.closed:
            return
        # Stop the monitor before closing its socket: closing a live monitor's PAIR end can
        # wedge the context's I/O thread, which carries this client's heartbeats too.
        with contextlib.suppress(zmq.ZMQError):
            self.socket.disable_monitor()
        self.monitor.close(linger=0)
        self.socket.close(linger=100)
        self.client._channel_closed(self)


def raise_remote_error(frames: list[Any], what: str, channel: ActorChannel) -> None:
    """Raise the error a job reported: the user's exception type where it unpickles.

    The exception object is unpickled only from a job that proved it holds the cluster secret;
    ``SystemExit`` and ``KeyboardInterrupt`` in an actor arrive as :class:`RemoteError`, so an
    actor cannot end its caller's program.
    """
    where = f"{what} in {channel.describe()}"
    try:
        info = P.decode(bytes(frames[0]), limit=1 << 20)
    except (P.BadMessage, IndexError):
        raise RemoteError(f"{where} failed and its error report was malformed") from None
    kind = info.get("kind")
    message = str(info.get("message", ""))
    if kind == "attribute":
        raise RemoteAttributeError(f"{where}: {message}")
    if kind == "serialize":
        raise SerializeError(f"{where}: {message}")
    if kind == "deserialize":
        raise DeserializeError(f"{where}: {message}")
    if kind in ("orphaned", "taken") and not channel.initialised:
        raise _JobUnreachable(f"{where}: {message}")  # creation tries another job
    if kind == "orphaned":
        channel._died({"reason": "exited", "message": f"{where}: {message}"})
        raise ActorDiedError(channel.dead)
    if kind in ("taken", "malformed"):
        raise RemoteError(f"{where}: {message}")
    cause = RemoteTraceback(str(info.get("traceback", "")))
    exc = None
    if channel.verified and info.get("ordinary") and len(frames) > 1:
        try:
            exc = pickle.loads(frames[1])
        except Exception:
            exc = None
    if isinstance(exc, Exception):
        exc.__cause__ = cause
        if hasattr(exc, "add_note"):
            exc.add_note(f"(raised remotely by {where})")
        raise as_remote(exc, cause.traceback_text)
    error = RemoteError(f"{where} raised {info.get('type')}: {message}")
    error.remote_traceback = cause.traceback_text
    raise error from cause


def _death_notice(frame: memoryview, who: str) -> dict[str, Any]:
    """What a job said of its own death (its reason and message), or a plain notice if that
    report is malformed: the actor is gone either way."""
    try:
        return P.decode(bytes(frame))
    except P.BadMessage:
        return {"reason": "exited", "message": f"{who} died (its last report was malformed)"}


def _shadowed(reply: list[Any]) -> list[str]:
    """The shadowing attribute names an INIT reply lists (none from an older job)."""
    try:
        names = P.decode(bytes(reply[0]), limit=1 << 20).get("shadowed", []) if reply else []
    except P.BadMessage:
        return []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


_client: Client | None = None
_client_lock = threading.Lock()
# A non-xparl backend chosen by connect(), with the pid and address it was made for.
_backend: Backend | None = None
_backend_pid = 0
_backend_address: str | None = None
_backend_lock = threading.Lock()
_xparl_backend: Backend | None = None


def connect(
    address: str | None = None,
    distributed_files: Sequence[str] | None = None,
    *,
    cpu_num: int | None = None,
    connect_timeout: float | None = None,
    resource_timeout: float | None = None,
    heartbeat_timeout: float | None = None,
    call_timeout: float | None = None,
    secret_file: str | os.PathLike[str] | None = None,
    insecure: bool = False,
) -> Any:
    """Connect this process to a cluster that runs its actors: xparl (default) or Ray.

    The address picks the backend: ``"HOST:PORT"`` an xparl master, None an embedded local xparl
    cluster, ``"ray"`` a local Ray started for this process (or the one ``ray.init`` already
    started), ``"ray://HOST:10001"`` a Ray cluster through Ray client (needs
    ``pip install "parl-remote[ray]"``), ``"SCHEME://..."`` a backend plugin registered under
    the entry-point group ``parl.remote.backends``. The rest of the program is the same on
    every backend.

    The cluster's secret is found without set-up for a cluster started by this account on this
    machine (its owner-only record, under any loopback name of its port); for another machine's
    cluster pass ``secret_file`` or set ``PARL_CLUSTER_SECRET``. Without a secret the connection
    is refused: no authentication is used only when asked for with ``insecure=True``.

    Args:
        address: ``host:port`` printed by ``xparl start``. None starts an embedded local cluster
            (a master and a worker with ``cpu_num`` CPUs) that stops when this process exits.
            ``"ray"`` or ``"ray://HOST:PORT"``: Ray (see above).
        distributed_files: Extra files for every actor's job: glob patterns, files, folders.
        cpu_num: CPUs of the embedded cluster or of the local Ray (default ``os.cpu_count()``).
        connect_timeout: Seconds to wait for the master (default ``XPARL_CONNECT_TIMEOUT``).
        resource_timeout: Seconds actor creation waits for a vacant CPU/GPU
            (default ``XPARL_RESOURCE_TIMEOUT``).
        heartbeat_timeout: Seconds of silence before the master counts as lost and an actor's
            process as gone (default ``XPARL_HEARTBEAT_TIMEOUT``).
        call_timeout: Default seconds a call may run before :class:`CallTimeoutError`
            (default ``XPARL_CALL_TIMEOUT``, unset: no limit); ``@parl.remote_class(
            call_timeout=...)`` overrides it per class.
        secret_file: An owner-only file holding the cluster secret (xparl only).
        insecure: Connect without authentication, to a cluster started with
            ``xparl start --insecure`` (xparl only); any other cluster is then refused.

    Returns:
        The connection: for xparl the process's :class:`Client`, for another backend the
        :class:`~parl.remote.backends.Backend`. Connecting again to the same address returns
        it unchanged.

    Raises:
        ConnectError: Nothing answers at ``address`` within ``connect_timeout``.
        AuthenticationError: No secret was found for ``address`` (the message says where it
            was looked for), the cluster refused this client's secret, or the cluster's
            security is not what was asked for (an ``--insecure`` cluster without
            ``insecure=True``).
        VersionMismatchError: The cluster runs another parl-remote or Python version.
        ValueError: ``address`` is malformed or names no installed backend, a
            ``distributed_files`` entry matches nothing, or the secret file is missing or
            readable by other accounts.
        ImportError: The backend needs a package that is not installed (the message says
            which; Ray: ``pip install "parl-remote[ray]"``).
        TypeError: An option the chosen backend does not take.

    Examples:
        >>> import parl
        >>> parl.connect("127.0.0.1:6006")  # a cluster started there  # doctest: +SKIP
    """
    global _backend
    from parl.remote.backends import load_backend, split_address

    scheme, target = split_address(address)
    given = {
        "cpu_num": cpu_num,
        "connect_timeout": connect_timeout,
        "resource_timeout": resource_timeout,
        "heartbeat_timeout": heartbeat_timeout,
        "call_timeout": call_timeout,
        "secret_file": secret_file,
        "insecure": insecure or None,
    }
    options = {k: v for k, v in given.items() if v is not None}
    with _backend_lock:
        if _backend is not None and _backend_pid == os.getpid():
            if _backend_address == address and not distributed_files and not options:
                return _backend
            raise ConnectError(
                f"this process is already connected to {_backend_address!r}; call "
                f"parl.remote.disconnect() before connecting to {address!r}"
            )
    if scheme != "xparl" and _client is not None and _client.pid == os.getpid():
        raise ConnectError(
            f"this process is already connected to the xparl cluster at {_client.address}; "
            f"call parl.remote.disconnect() before connecting to {address!r}"
        )
    backend_class = load_backend(scheme)
    backend = backend_class.connect(target, distributed_files, **options)
    if scheme == "xparl":
        return getattr(backend, "connection", backend)
    with _backend_lock:
        _set_backend(backend, address)
    return backend


def current_backend() -> Backend:
    """The backend of this process's connection (xparl unless ``parl.connect`` chose another).

    Raises:
        ConnectError: ``parl.connect`` was not called.
    """
    backend = _backend
    if backend is not None and _backend_pid == os.getpid():
        return backend
    get_client()  # raises ConnectError when not connected at all
    global _xparl_backend
    if _xparl_backend is None:
        from parl.remote.backends.xparl import XparlBackend

        _xparl_backend = XparlBackend()
    return _xparl_backend


def _set_backend(backend: Backend | None, address: str | None) -> None:
    global _backend, _backend_pid, _backend_address
    _backend, _backend_pid, _backend_address = backend, os.getpid(), address


def disconnect() -> None:
    """Release every actor of this process and close its connection (stop an embedded xparl
    cluster, or a local Ray that ``parl.connect("ray")`` started)."""
    with _backend_lock:
        backend = _backend if _backend_pid == os.getpid() else None
        _set_backend(None, None)
    if backend is not None:
        backend.shutdown()
    disconnect_xparl()


def connect_xparl(
    address: str | None = None,
    distributed_files: Sequence[str] | None = None,
    *,
    cpu_num: int | None = None,
    connect_timeout: float | None = None,
    resource_timeout: float | None = None,
    heartbeat_timeout: float | None = None,
    call_timeout: float | None = None,
    secret_file: str | os.PathLike[str] | None = None,
    insecure: bool = False,
) -> Client:
    """Connect this process to an xparl cluster (the xparl backend of :func:`connect`)."""
    global _client
    if distributed_files is not None and isinstance(distributed_files, str):
        raise TypeError(
            f"distributed_files must be a list of paths or globs, got the string "
            f"{distributed_files!r}; wrap it in a list: [{distributed_files!r}]"
        )
    if insecure and address is None:
        raise ValueError(
            "insecure=True applies to the address of a cluster started with `xparl start "
            "--insecure`; the embedded cluster of parl.connect() always authenticates"
        )
    if cpu_num is not None and address is not None:
        raise ValueError(
            "cpu_num applies only to the embedded cluster of parl.connect() "
            "without an address; use `xparl connect --cpu_num N` to add CPUs"
        )
    overrides = {
        k: v
        for k, v in {
            "connect_timeout": connect_timeout,
            "resource_timeout": resource_timeout,
            "heartbeat_timeout": heartbeat_timeout,
            "call_timeout": call_timeout,
        }.items()
        if v is not None
    }
    for name, value in overrides.items():
        if not value > 0:
            raise ValueError(f"{name}={value!r} must be a positive number of seconds")
    timeouts = replace(Timeouts(), **overrides)
    with _client_lock:
        if _client is not None and _client.pid == os.getpid():
            if address is None or address == _client.address:
                return _client
            raise ConnectError(
                f"this process is already connected to {_client.address}; call "
                f"parl.remote.disconnect() before connecting to {address}"
            )
        if address is None:
            from parl.remote.cluster import LocalCluster

            cluster = LocalCluster.start(
                cpu_num or os.cpu_count() or 1, timeouts=timeouts, embedded=True
            )
            try:
                client = Client(cluster.address, distributed_files, timeouts, cluster.security)
            except BaseException:
                cluster.stop()
                raise
            client.cluster = cluster
        else:
            from parl.remote.cluster import find_security

            security = find_security(_validate_address(address), secret_file, insecure)
            client = Client(address, distributed_files, timeouts, security)
        _client = client
        return client


def disconnect_xparl() -> None:
    """Close the xparl connection: release its actors, stop an embedded cluster."""
    global _client
    with _client_lock:
        client, _client = _client, None
    if client is not None and client.pid == os.getpid():
        client.close()


def get_client() -> Client:
    """The process's client; a forked child reconnects with the parent's address and files."""
    global _client
    client = _client
    if client is not None and client.pid == os.getpid():
        return client
    if client is None:
        raise ConnectError(
            "not connected to an xparl cluster: call parl.connect('HOST:PORT') (the address "
            "`xparl start` printed) or parl.connect() for a local cluster before creating actors"
        )
    with _client_lock:
        if _client is client:
            _client = Client(
                client.address, client.distributed_files, client.timeouts, client.security
            )
        if _client is None:
            raise ConnectError(
                "another thread called parl.remote.disconnect(); call parl.connect(...) again"
            )
        return _client


def get_global_client() -> Client:
    """PARL 2.x's name for :func:`get_client`: this process's xparl client (a forked child
    gets its own, connected to the same cluster).

    Raises:
        ConnectError: ``parl.connect`` was not called (PARL 2.x asserted instead).
    """
    return get_client()


def _disconnect_at_exit() -> None:
    """Disconnect as the interpreter exits; the daemon threads still inside calls stop quietly
    (see :func:`_exit_quietly`)."""
    global _exiting
    _exiting = True
    disconnect()


atexit.register(_disconnect_at_exit)
