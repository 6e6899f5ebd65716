"""The client inside the user's process: the master handshake, heartbeats, actor creation and
the per-actor channel that carries calls straight to the actor's job process."""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import sys
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from parl.remote import protocol as P
from parl.remote.config import Timeouts
from parl.remote.exceptions import (
    ActorDiedError,
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
)
from parl.remote.files import collect_files
from parl.remote.serialization import dumps

import zmq
from zmq.utils.monitor import recv_monitor_message

if TYPE_CHECKING:
    from parl.remote.cluster import LocalCluster

__all__ = ["ActorChannel", "Client", "connect", "disconnect", "get_client"]

_POLL_SLICE_MS = 100
_DISCONNECT_GRACE_MS = 100


def _validate_address(address: str) -> str:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"address {address!r} is not of the form HOST:PORT (for example 127.0.0.1:6006); "
            "pass the address `xparl start` printed, or call parl.connect() with no address to "
            "start a local cluster"
        )
    return address


class Client:
    """A connection to an xparl master (one per process; see :func:`connect`).

    Args:
        address: ``host:port`` of the master.
        distributed_files: Extra files for every job (see :mod:`parl.remote.files`).
        timeouts: Timeouts of this client.
    """

    def __init__(
        self, address: str, distributed_files: Sequence[str] | None, timeouts: Timeouts
    ) -> None:
        self.address = _validate_address(address)
        self.distributed_files = list(distributed_files or [])
        self.files_blob = b""
        files = collect_files(self.distributed_files)
        if files:
            self.files_blob = pickle.dumps(files, protocol=5)
        self.shipped_files = set(files)
        self.timeouts = timeouts
        self.client_id = uuid.uuid4().hex
        self.pid = os.getpid()
        self.context = zmq.Context()
        self.master_lost: str | None = None
        self.dead_jobs: dict[str, tuple[str, str]] = {}
        self.channels: weakref.WeakSet[ActorChannel] = weakref.WeakSet()
        self.cluster: LocalCluster | None = None
        self._local = threading.local()
        self._sockets: list[zmq.Socket] = []
        self._sockets_lock = threading.Lock()
        self._releases: deque[str] = deque()
        self._wake_r, self._wake_w = os.pipe()
        self._closed = threading.Event()
        self._wake_lock = threading.Lock()
        self._heartbeat = self._dial_master()
        self._handshake()
        self._thread = threading.Thread(target=self._beat, name="xparl-client", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ master link
    def _handshake(self) -> None:
        main = sys.modules.get("__main__")
        self._heartbeat.send_multipart(
            [
                P.HELLO,
                P.encode(
                    {
                        **P.identity(),
                        "client_id": self.client_id,
                        "script": os.path.abspath(getattr(main, "__file__", "") or "<interactive>"),
                    }
                ),
            ]
        )
        if not self._heartbeat.poll(int(self.timeouts.connect_timeout * 1000)):
            self._heartbeat.close()
            self.context.term()
            raise ConnectError(
                f"no xparl master answered at {self.address} within "
                f"{self.timeouts.connect_timeout:g} s (nothing listens there, or a firewall drops "
                "the connection). Start a cluster with `xparl start --port PORT`, check the "
                "address, or call parl.connect() with no address for a local cluster."
            )
        tag, body = self._heartbeat.recv_multipart()
        reply = P.decode(body)
        if tag != P.ACK:
            self._heartbeat.close()
            self.context.term()
            if reply.get("kind") == "version":
                raise VersionMismatchError(reply.get("message"))
            raise ConnectError(f"the master at {self.address} refused the client: {reply}")
        self.master_info = reply

    def _beat(self) -> None:
        poller = zmq.Poller()
        poller.register(self._heartbeat, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        interval = self.timeouts.heartbeat_interval
        last_beat = 0.0
        last_ack = last_loop = time.monotonic()
        redialed = False
        while not self._closed.is_set():
            events = dict(poller.poll(int(interval * 1000)))
            if self._wake_r in events:
                os.read(self._wake_r, 4096)
            while self._releases:
                job_id = self._releases.popleft()
                self._send_heartbeat_socket(P.RELEASE_ACTOR, {"job_id": job_id})
            if self._heartbeat in events:
                while True:
                    try:
                        tag, body = self._heartbeat.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    except ValueError:
                        continue
                    last_ack = time.monotonic()
                    if tag == P.ACTOR_DIED:
                        info = P.decode(body)
                        self.dead_jobs[str(info["job_id"])] = (
                            str(info.get("reason")),
                            str(info.get("message")),
                        )
                    elif tag == P.ERROR:
                        self.master_lost = (
                            f"the master at {self.address} no longer knows this client "
                            f"({P.decode(body).get('message')})"
                        )
            now = time.monotonic()
            if now - last_loop > self.timeouts.heartbeat_timeout / 2:
                last_ack = now  # this process was stalled: give the master a new window
            last_loop = now
            if now - last_beat >= interval:
                self._send_heartbeat_socket(
                    P.CLIENT_HEARTBEAT, {"client_id": self.client_id, "actors": len(self.channels)}
                )
                last_beat = now
            if now - last_ack > self.timeouts.heartbeat_timeout / 2 and not redialed:
                # A silent link may be a broken connection rather than a dead master: redial once.
                poller.unregister(self._heartbeat)
                self._heartbeat.close(linger=0)
                self._heartbeat = self._dial_master()
                poller.register(self._heartbeat, zmq.POLLIN)
                redialed = True
            if now - last_ack <= interval * 2:
                redialed = False
            if now - last_ack > self.timeouts.heartbeat_timeout and self.master_lost is None:
                self.master_lost = (
                    f"the master at {self.address} stopped answering (no reply for "
                    f"{now - last_ack:.1f} s; heartbeat timeout "
                    f"{self.timeouts.heartbeat_timeout:g} s)"
                )
        while self._releases:
            self._send_heartbeat_socket(P.RELEASE_ACTOR, {"job_id": self._releases.popleft()})
        self._send_heartbeat_socket(P.GOODBYE, {"client_id": self.client_id})
        self._heartbeat.close(linger=200)

    def _dial_master(self) -> zmq.Socket:
        sock = self.context.socket(zmq.DEALER)
        sock.linger = 0
        sock.connect(f"tcp://{self.address}")
        return sock

    def _send_heartbeat_socket(self, tag: bytes, payload: dict[str, Any]) -> None:
        with contextlib.suppress(zmq.ZMQError):
            self._heartbeat.send_multipart([tag, P.encode(payload)], zmq.NOBLOCK)

    def _master_socket(self) -> zmq.Socket:
        sock = getattr(self._local, "socket", None)
        if sock is None:
            sock = self.context.socket(zmq.DEALER)
            sock.linger = 0
            sock.connect(f"tcp://{self.address}")
            self._local.socket = sock
            with self._sockets_lock:
                self._sockets.append(sock)
        return sock

    def request(self, tag: bytes, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send a control request to the master and wait for its answer (bounded)."""
        self.check_master()
        sock = self._master_socket()
        request_id = uuid.uuid4().hex
        sock.send_multipart([tag, P.encode({**payload, "request_id": request_id})])
        deadline = time.monotonic() + timeout
        while True:
            if sock.poll(_POLL_SLICE_MS):
                reply_tag, body = sock.recv_multipart()
                reply = P.decode(body)
                if reply.get("request_id") not in (None, request_id):
                    continue
                if reply_tag == P.ERROR:
                    if reply.get("kind") == "resource":
                        raise ResourceError(reply.get("message"))
                    raise RemoteError(f"the master refused the request: {reply.get('message')}")
                return reply
            self.check_master()
            if time.monotonic() > deadline:
                raise ConnectError(
                    f"the master at {self.address} did not answer within {timeout:g} s"
                )

    def check_master(self) -> None:
        """Raise MasterLostError if the master was lost, ConnectError if disconnected."""
        if self._closed.is_set():
            raise ConnectError("this client was disconnected; call parl.connect(...) again")
        if self.master_lost is not None:
            raise MasterLostError(
                f"{self.master_lost}. Restart the cluster and call parl.remote.disconnect() "
                "then parl.connect(...)."
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
    ) -> ActorChannel:
        """Reserve a job from the master, send it the class and arguments, return its channel."""
        arg_frames = dumps((args, kwargs), f"the arguments of {class_name}()")
        timeout = self.timeouts.resource_timeout
        grant = self.request(
            P.REQUEST_ACTOR,
            {"client_id": self.client_id, "n_gpu": n_gpu, "timeout": timeout},
            timeout + self.timeouts.heartbeat_timeout,
        )
        channel = ActorChannel(self, grant, class_name)
        spec = P.encode(
            {
                "class_name": class_name,
                "client_id": self.client_id,
                "gpus": grant["gpus"],
                "max_memory": max_memory,
            }
        )
        try:
            channel.request(
                P.OP_INIT,
                [spec, self.files_blob, *class_frames, *arg_frames],
                f"{class_name}.__init__",
            )
        except BaseException:
            channel.close(notify=not channel.dead)
            raise
        self.channels.add(channel)
        return channel

    def release_later(self, job_id: str) -> None:
        """Tell the master (from the heartbeat thread) that ``job_id`` is released."""
        with self._wake_lock:
            if self._closed.is_set():
                return
            self._releases.append(job_id)
            os.write(self._wake_w, b"r")

    def close(self) -> None:
        """Release every actor of this client and close its sockets."""
        if self._closed.is_set():
            return
        for channel in list(self.channels):
            channel.close()
        with self._wake_lock:
            self._closed.set()
            os.write(self._wake_w, b"q")
        self._thread.join(timeout=2)
        with self._sockets_lock:
            for sock in self._sockets:
                sock.close(linger=0)
        self.context.destroy(linger=200)
        with self._wake_lock:
            os.close(self._wake_r)
            os.close(self._wake_w)
        if self.cluster is not None:
            self.cluster.stop()


class ActorChannel:
    """The DEALER socket of one actor: one outstanding request at a time, death noticed fast.

    A call waits for its reply in slices; between slices it checks the socket monitor (the job's
    TCP connection closed: the process is gone) and the master's death notices (worker lost,
    memory limit). So a dead actor becomes :class:`ActorDiedError` within about 0.2 s on the same
    machine and within the heartbeat timeout across machines.
    """

    def __init__(self, client: Client, grant: dict[str, Any], class_name: str) -> None:
        self.client = client
        self.job_id: str = grant["job_id"]
        self.address: str = grant["address"]
        self.hostname: str = grant.get("hostname", "")
        self.pid: int | None = grant.get("pid")
        self.gpus: list[str] = grant.get("gpus", [])
        self.class_name = class_name
        self.lock = threading.Lock()
        self.dead: str | None = None
        self.dead_type: type[ActorDiedError] = ActorDiedError
        self.seq = 0
        self.socket = client.context.socket(zmq.DEALER)
        self.socket.linger = 0
        self.socket.rcvtimeo = _POLL_SLICE_MS
        self.monitor = self.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.socket.connect(f"tcp://{self.address}")

    def describe(self) -> str:
        return f"actor {self.class_name} (job {self.job_id} on {self.hostname or self.address})"

    def request(self, op: bytes, frames: list[Any], what: str) -> list[Any]:
        """Send one request and return the reply frames; raise the remote error if any."""
        with self.lock:
            if self.dead is not None:
                raise self.dead_type(self.dead)
            self.seq += 1
            seq = self.seq.to_bytes(8, "little")
            sock = self.socket
            sock.send_multipart([seq, op, *frames], copy=False)
            while True:
                try:
                    reply = sock.recv_multipart(copy=False)
                except zmq.Again:
                    self._check_alive(what)
                    continue
                status = reply[1].bytes
                if status == P.REPLY_DIED:
                    self._died(P.decode(reply[2].bytes))
                    raise self.dead_type(self.dead)
                if reply[0].bytes != seq:
                    continue
                if status == P.REPLY_OK:
                    return reply[2:]
                raise_remote_error(reply[2].bytes, what, self)

    def _check_alive(self, what: str) -> None:
        disconnected = False
        while True:
            try:
                recv_monitor_message(self.monitor, zmq.NOBLOCK)
                disconnected = True
            except zmq.Again:
                break
        notice = self.client.dead_jobs.get(self.job_id)
        if notice is not None:
            self._died({"reason": notice[0], "message": notice[1]})
        elif disconnected:
            if self.socket.poll(_DISCONNECT_GRACE_MS):
                reply = self.socket.recv_multipart()
                if reply[1] == P.REPLY_DIED:
                    self._died(P.decode(reply[2]))
            if self.dead is None:
                self._died(
                    {
                        "reason": "exited",
                        "message": (
                            f"{self.describe()} died while running {what}: its process "
                            f"exited or was killed. Its log: `xparl logs {self.job_id}`. "
                            "Create a new actor to go on."
                        ),
                    }
                )
        if self.dead is not None:
            raise self.dead_type(self.dead)

    def _died(self, info: dict[str, Any]) -> None:
        self.dead = str(info.get("message") or f"{self.describe()} died")
        if info.get("reason") == "max_memory":
            self.dead_type = MemoryLimitError
        self.client.channels.discard(self)
        self.client.release_later(self.job_id)

    def close(self, notify: bool = True) -> None:
        """Release the actor: its job exits and its CPU returns to the pool at once."""
        if self.socket.closed:
            return
        if self.dead is None and notify and self.lock.acquire(blocking=False):
            try:
                self.socket.send_multipart([b"\0" * 8, P.OP_RELEASE], zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
            finally:
                self.lock.release()
        self.dead = self.dead or f"{self.describe()} was released"
        self.client.channels.discard(self)
        self.client.release_later(self.job_id)
        # Stop the monitor before closing its socket: closing a live monitor's PAIR end can
        # wedge the context's I/O thread, which carries this client's heartbeats too.
        with contextlib.suppress(zmq.ZMQError):
            self.socket.disable_monitor()
        self.monitor.close(linger=0)
        self.socket.close(linger=100)


def raise_remote_error(body: bytes, what: str, channel: ActorChannel) -> None:
    """Raise the error a job reported: the user's exception type where it unpickles."""
    info = pickle.loads(body)
    kind = info["kind"]
    where = f"{what} in {channel.describe()}"
    if kind == "attribute":
        raise RemoteAttributeError(f"{where}: {info['message']}")
    if kind == "serialize":
        raise SerializeError(f"{where}: {info['message']}")
    if kind == "deserialize":
        raise DeserializeError(f"{where}: {info['message']}")
    cause = RemoteTraceback(info["traceback"])
    exc = None
    if info["exc"] is not None:
        try:
            exc = pickle.loads(info["exc"])
        except Exception:
            exc = None
    if isinstance(exc, BaseException):
        exc.__cause__ = cause
        if hasattr(exc, "add_note"):
            exc.add_note(f"(raised remotely by {where})")
        raise exc
    raise RemoteError(f"{where} raised {info['type']}: {info['message']}") from cause


_client: Client | None = None
_client_lock = threading.Lock()


def connect(
    address: str | None = None,
    distributed_files: Sequence[str] | None = None,
    *,
    cpu_num: int | None = None,
    connect_timeout: float | None = None,
    resource_timeout: float | None = None,
    heartbeat_timeout: float | None = None,
) -> Client:
    """Connect this process to an xparl cluster (or start a local one).

    Args:
        address: ``host:port`` printed by ``xparl start``. None starts an embedded local cluster
            (a master and a worker with ``cpu_num`` CPUs) that stops when this process exits.
        distributed_files: Extra files for every actor's job: glob patterns, files, folders.
        cpu_num: CPUs of the embedded cluster (default ``os.cpu_count()``); only without address.
        connect_timeout: Seconds to wait for the master (default ``XPARL_CONNECT_TIMEOUT``).
        resource_timeout: Seconds actor creation waits for a vacant CPU/GPU
            (default ``XPARL_RESOURCE_TIMEOUT``).
        heartbeat_timeout: Seconds of master silence before it counts as lost
            (default ``XPARL_HEARTBEAT_TIMEOUT``).

    Returns:
        The process's client. Connecting again to the same address returns it unchanged.

    Raises:
        ConnectError: Nothing answers at ``address`` within ``connect_timeout``.
        VersionMismatchError: The cluster runs another parl-remote or Python version.
        ValueError: ``address`` is malformed or a ``distributed_files`` entry matches nothing.

    Examples:
        >>> import parl
        >>> parl.connect("127.0.0.1:6006")  # doctest: +SKIP
    """
    global _client
    if distributed_files is not None and isinstance(distributed_files, str):
        raise TypeError(
            f"distributed_files must be a list of paths or globs, got the string "
            f"{distributed_files!r}; wrap it in a list: [{distributed_files!r}]"
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
                client = Client(cluster.address, distributed_files, timeouts)
            except BaseException:
                cluster.stop()
                raise
            client.cluster = cluster
        else:
            client = Client(address, distributed_files, timeouts)
        _client = client
        return client


def disconnect() -> None:
    """Release every actor of this process, close the connection, stop an embedded cluster."""
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
            _client = Client(client.address, client.distributed_files, client.timeouts)
        if _client is None:
            raise ConnectError(
                "another thread called parl.remote.disconnect(); call parl.connect(...) again"
            )
        return _client


atexit.register(disconnect)
