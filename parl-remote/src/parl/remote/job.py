"""A job process: hosts exactly one actor for its client, then exits.

A worker starts jobs ahead of time (the warm pool), each as the leader of its own process group,
and hands it the cluster secret on stdin. A job binds a socket that admits only holders of its
credentials (:mod:`parl.remote.security`), tells the worker it is ready, and waits. Its client
first checks the job's proof of membership (HELLO), then sends INIT (files, class, arguments);
the job tells the worker it is claimed and answers calls, attribute reads and writes until the
client releases it or its connection ends. libzmq pings the client from its own I/O thread, so a
client whose process stops or whose machine vanishes is noticed even while the actor computes.
A watchdog thread watches that connection, the worker and ``max_memory``: when the client goes
away during a call (or the worker dies, or the actor outgrows ``max_memory``) it takes the whole
process group down, the call and whatever it started with it; an idle job it wakes to exit.
Malformed messages are answered with an error and counted, and no error of one message ends
the job.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from parl.core.backend import BACKENDS
from parl.remote import protocol as P
from parl.remote.backends import shadowing_attributes
from parl.remote.config import Limits, Timeouts
from parl.remote.exceptions import DeserializeError, SerializeError
from parl.remote.files import unpack_files, write_files
from parl.remote.framework import adopt_framework
from parl.remote.memory import MemoryLimit
from parl.remote.processes import end_own_group, raise_fd_limit
from parl.remote.security import Mode, Security
from parl.remote.serialization import dumps, load_class, loads, payload_size

import cloudpickle
import zmq

_MAX_FRAMES = 1 << 16
_MAX_TEXT = 64 * 2**10
_REPORTED_TEXT = 16 * 2**10  # of a traceback the worker keeps for the monitor
_REPORTED_REASON = 4000  # of why a job ended (a worker takes 4,096 characters)


def error_info(kind: str, exc: BaseException, skip_frames: int = 0) -> dict[str, Any]:
    """Describe ``exc`` as JSON: kind, type, message and traceback text (bounded)."""
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return {
        "kind": kind,
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": str(exc)[:_MAX_TEXT],
        "traceback": text[-_MAX_TEXT:],
        "ordinary": isinstance(exc, Exception),
    }


def error_frames(kind: str, exc: BaseException, skip_frames: int = 0) -> list[bytes]:
    """Describe ``exc`` for the caller: a JSON frame (:func:`error_info`) and, for an
    ordinary exception that pickles, the exception itself so the caller can re-raise its type.

    ``SystemExit``, ``KeyboardInterrupt`` and other non-``Exception`` errors are never sent as
    objects: re-raised at the caller they would end the caller's program.
    """
    info = error_info(kind, exc, skip_frames)
    frames = [P.encode(info)]
    if info["ordinary"]:
        with contextlib.suppress(Exception):
            frames.append(cloudpickle.dumps(exc, protocol=5))
    return frames


def _notice(kind: str, message: str, **facts: Any) -> list[bytes]:
    return [P.encode({"kind": kind, "type": "", "message": message, "traceback": "", **facts})]


class Job:
    """The actor host inside a job process.

    Args:
        job_id: Id given by the worker (also the actor's log name).
        worker_endpoint: The worker's job socket.
        host: Host to bind.
        advertise_host: Host the client dials.
        timeouts: Heartbeat and watchdog intervals.
        security: The cluster's security (encryption is forced beyond loopback).
        limits: Message size bounds.
        worker_pid: The worker's pid: a job whose parent is another process is an orphan.
    """

    def __init__(
        self,
        job_id: str,
        worker_endpoint: str,
        host: str,
        advertise_host: str,
        timeouts: Timeouts,
        security: Security,
        limits: Limits,
        worker_pid: int | None = None,
    ) -> None:
        self.job_id = job_id
        self.timeouts = timeouts
        self.limits = limits
        self.security = security.binding(host)
        self.context = zmq.Context()
        self.gatekeeper = self.security.start_gatekeeper(self.context, job_id)
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.linger = 1000
        P.bound_inbound(self.socket, limits.max_message_bytes)
        self.socket.heartbeat_ivl = int(timeouts.heartbeat_interval * 1000)
        self.socket.heartbeat_timeout = int(timeouts.heartbeat_timeout * 1000)
        self.security.serve_job(self.socket, job_id)
        port = P.bind_socket(self.socket, host)
        self.address = f"{advertise_host}:{port}"
        self.watch = P.Watch(
            self.socket,
            zmq.EVENT_DISCONNECTED,
            f"job {job_id} refused a connection",
            _Log(),
            bound=True,
        )
        self.worker = self.context.socket(zmq.DEALER)
        self.worker.linger = 1000
        P.bound_inbound(self.worker, P.CONTROL_MAX_BYTES)
        self.security.dial_control(self.worker)
        self.worker.connect(worker_endpoint)
        # The watchdog wakes the serving thread when the client goes away, through the client
        # socket itself (an in-process peer with an unguessable id), so that serving is one
        # blocking receive per message rather than a poll of two sockets and a receive.
        self.wake_id = b"wake" + os.urandom(16)
        self.socket.bind(f"inproc://xparl-wake-{job_id}")
        self.waker = self.context.socket(zmq.DEALER)
        self.waker.routing_id = self.wake_id
        self.waker.connect(f"inproc://xparl-wake-{job_id}")
        self.lock = threading.Lock()
        self.owner: bytes | None = None
        self.owner_fd: int | None = None
        self.reply_limit = limits.max_message_bytes
        self.instance: Any = None
        self.memory_limit: MemoryLimit | None = None
        self.bad_messages = 0
        self.parent = worker_pid or os.getppid()
        self.failed_at: float | None = None  # when INIT failed: the job lingers, then exits
        # Set by the serving thread around each operation and by the watchdog when the client's
        # connection ends; each checks the other's flag after setting its own, so a call that
        # starts as the client goes is ended either way.
        self.busy = False
        self.owner_lost = False

    def announce(self) -> None:
        """Tell the worker this job is ready to host an actor."""
        self._to_worker(
            P.JOB_READY,
            {
                "job_id": self.job_id,
                "address": self.address,
                "pid": os.getpid(),
                "mechanism": self.security.job_mechanism,
                "max_message_bytes": self.limits.max_message_bytes,
            },
        )

    def _to_worker(self, tag: bytes, payload: dict[str, Any]) -> None:
        with self.lock:
            self.worker.send_multipart([tag, P.encode(payload)])

    # ------------------------------------------------------------------ watchdog
    def watchdog(self) -> None:
        """End the process group when the worker dies or the client goes away during a call;
        kill the actor beyond ``max_memory``. This thread alone reads the client socket's
        monitor, so a call that never returns cannot hide the client's disconnect."""
        interval_ms = int(min(0.2, self.timeouts.memory_check_interval) * 1000)
        while True:
            try:
                self._watch_once(interval_ms)
            except Exception as exc:  # out of descriptors, say: this thread must go on
                with contextlib.suppress(OSError):  # a full disk under the log, too
                    self._count_bad(f"a watchdog turn that failed with {exc!r}")
                time.sleep(interval_ms / 1000)

    def _watch_once(self, interval_ms: int) -> None:
        if self.watch.socket.poll(interval_ms):
            self._watch_client()
        if os.getppid() != self.parent:
            end_own_group(3)
        message = self.memory_limit.exceeded() if self.memory_limit else None
        if message is not None:
            self._die_of_memory(message)

    def _watch_client(self) -> None:
        for event, fd in self.watch.drain():
            if event == zmq.EVENT_DISCONNECTED and fd == self.owner_fd and not self.owner_lost:
                self.owner_lost = True
                if self.busy:
                    self._end_call()
                self.waker.send(b"")  # idle: the serving thread exits

    def _end_call(self) -> None:
        """The client went away during a call: end the job's process group (the call and every
        process it started) now, rather than when the call returns, which may be never."""
        message = (
            f"its client disconnected during a call; job {self.job_id} ended the call and every "
            "process it started"
        )
        print(f"[xparl] {message}", file=sys.stderr, flush=True)
        payload = {"job_id": self.job_id, "reason": "client_lost", "message": message}
        with self.lock:  # held to the end: the serving thread sends nothing more
            self.worker.send_multipart([P.JOB_EXITED, P.encode(payload)])
            time.sleep(0.5)  # libzmq's I/O thread delivers the reason before the group ends
            end_own_group(1)

    def _die_of_memory(self, message: str) -> None:
        self.die("max_memory", message, 4)

    def die_of(self, exc: BaseException) -> NoReturn:
        """An error ended serving: say what the job died of (to its client and the worker, so
        the client's ActorDiedError names it), then end."""
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            self.die("disk_full", _disk_full(self.job_id, exc), 1)
        text = f"{type(exc).__name__}: {exc}"[:_REPORTED_REASON]
        self.die(
            "crashed", f"job {self.job_id} died of {text}; its log: `xparl logs {self.job_id}`", 1
        )

    def die(self, reason: str, message: str, code: int) -> NoReturn:
        """Tell the client (if one holds this job) and the worker why the job ends, then end."""
        with contextlib.suppress(OSError):  # the log may be what failed
            print(f"[xparl] {message}", file=sys.stderr, flush=True)
        payload = {"reason": reason, "message": message[:_REPORTED_REASON]}
        with self.lock:
            if self.owner is not None:
                frames = P.reply_frames(b"\0" * 8, P.REPLY_DIED, [P.encode(payload)])
                P.send_message(self.socket, [self.owner, *frames])
            self.worker.send_multipart([P.JOB_EXITED, P.encode({"job_id": self.job_id, **payload})])
        time.sleep(0.1)  # libzmq's I/O thread delivers the reason before the process ends
        os._exit(code)

    # ------------------------------------------------------------------ serving
    def _reply(self, identity: bytes, seq: bytes, status: bytes, frames: list[Any]) -> None:
        """Answer an operation, which is over once its answer leaves: a client that goes after
        reading it left no call behind (its job exits as an idle one, not as one cut short)."""
        reply = P.reply_frames(seq, status, frames)
        with self.lock:
            self.busy = False
            P.send_message(self.socket, [identity, *reply])

    def serve(self) -> None:
        """Answer the client until it releases this actor or its connection ends."""
        while True:
            try:
                self._receive()
            except Exception as exc:  # no error of one message ends the job
                self._count_bad(f"a message that failed with {exc!r}")
            if self.failed_at is not None:
                linger_ms = self._linger_ms()
                if linger_ms == 0:
                    print(
                        "[xparl] the client never released the failed actor; exiting",
                        file=sys.stderr,
                    )
                    self.exit(1)
                self.socket.rcvtimeo = linger_ms

    def _client_gone(self) -> None:
        print("[xparl] the client disconnected; exiting", file=sys.stderr)
        self.exit(self._exit_code())

    def _linger_ms(self) -> int:
        """How long a job whose INIT failed waits for its client to release it."""
        assert self.failed_at is not None
        left = self.failed_at + self.timeouts.heartbeat_timeout - time.monotonic()
        return max(0, int(left * 1000))

    def _exit_code(self) -> int:
        return 0 if self.failed_at is None else 1

    def _receive(self) -> None:
        try:
            frames = P.recv_message(self.socket, _MAX_FRAMES, heads=2)
        except zmq.Again:
            return
        if frames is None or len(frames) < 2:
            self._count_bad("a message with too few or too many frames")
            return
        identity = frames[0]
        if identity == self.wake_id:
            if self.owner_lost:  # the watchdog's wake-up: the client went away while idle
                self._client_gone()
            return
        try:
            request = P.parse_request(frames[1], frames[2:])
        except P.BadMessage as exc:
            self._count_bad(str(exc))
            notice = _notice("malformed", f"malformed: {exc}", bad_messages=self.bad_messages)
            self._reply(identity, frames[1][:8].ljust(8, b"\0"), P.REPLY_ERROR, notice)
            return
        seq, op = request.seq, request.op
        if self.owner is not None and identity != self.owner:
            message_text = f"job {self.job_id} already hosts another client's actor"
            self._reply(identity, seq, P.REPLY_ERROR, _notice("taken", message_text))
            return
        if os.getppid() != self.parent:  # the worker died: the watchdog ends this job shortly
            message_text = f"job {self.job_id} lost its worker"
            self._reply(identity, seq, P.REPLY_ERROR, _notice("orphaned", message_text))
            return
        if self.failed_at is not None and op not in (P.OP_RELEASE, P.OP_PING):
            message_text = f"job {self.job_id} hosts no actor: its constructor failed"
            self._reply(identity, seq, P.REPLY_ERROR, _notice("failed", message_text))
            return
        handler = (self._owner_ops if self.owner is not None else self._free_ops).get(op)
        self.busy = True
        if self.owner_lost:
            self._client_gone()
        try:
            if handler is None:
                raise P.BadMessage(f"unexpected operation {op[:16]!r}")
            handler(self, identity, request)
        except (P.BadMessage, UnicodeDecodeError) as exc:
            self._count_bad(str(exc))
            notice = _notice("malformed", f"malformed: {exc}", bad_messages=self.bad_messages)
            self._reply(identity, seq, P.REPLY_ERROR, notice)
        finally:
            self.busy = False

    def _count_bad(self, what: str) -> None:
        self.bad_messages += 1
        if self.bad_messages <= 10 or self.bad_messages % 1000 == 0:
            print(f"[xparl] dropped {what} ({self.bad_messages} so far)", file=sys.stderr)

    def _hello(self, identity: bytes, request: P.Request) -> None:
        nonce = request.payload
        if len(nonce) != 1 or not 16 <= len(nonce[0]) <= 64:
            raise P.BadMessage("HELLO carries one nonce of 16 to 64 bytes")
        proof = self.security.job_proof(self.job_id, bytes(nonce[0]))
        self._reply(identity, request.seq, P.REPLY_OK, [proof])

    def _init(self, identity: bytes, request: P.Request) -> None:
        seq, payload = request.seq, request.payload
        if len(payload) < 5:
            raise P.BadMessage("INIT carries a spec, a file list, files, a class and arguments")
        spec = P.decode(bytes(payload[0]))
        name = P.text(spec, "class_name")
        client_id = P.text(spec, "client_id", max_len=64)
        gpus = [str(g) for g in P.items(spec, "gpus", str, 64)]
        max_memory = spec.get("max_memory")
        if max_memory is not None:
            max_memory = P.number(spec, "max_memory", 1e-3, 1e12, 0)
        reply_limit = P.integer(spec, "max_message_bytes", 1, 1 << 62)
        framework = spec.get("framework")
        if framework is not None and framework not in BACKENDS:
            raise P.BadMessage(f"field 'framework' must be null or one of {BACKENDS}")
        try:
            files = unpack_files(bytes(payload[1]), bytes(payload[2]))
        except ValueError as exc:
            raise P.BadMessage(str(exc)) from None
        # The connection the client's frames came on: its end is the client's end.
        self.owner, self.owner_fd = identity, request.frames[-1].get(zmq.SRCFD)
        self.reply_limit = reply_limit
        claim = {"job_id": self.job_id, "client_id": client_id, "gpus": gpus, "class_name": name}
        self._to_worker(P.JOB_CLAIMED, claim)
        if max_memory:
            self.memory_limit = MemoryLimit(max_memory, self.job_id)
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        os.environ["XPARL_CLIENT_ID"] = client_id
        adopt_framework(framework)  # before the class's modules resolve parl.Model
        sys.path.insert(0, os.getcwd())
        print(f"[xparl] job {self.job_id} hosts an actor of class {name}", flush=True)
        try:
            write_files(files, Path.cwd())
            cls = load_class([payload[3]], f"the class {name}", Path.cwd())
            args, kwargs = _arguments(payload[4:], f"the arguments of {name}()")
        except (OSError, DeserializeError) as exc:
            self._fail_init(identity, seq, error_frames("deserialize", exc))
            return
        try:
            self.instance = cls(*args, **kwargs)
        except BaseException as exc:
            self._report_error(exc)
            self._fail_init(identity, seq, error_frames("user", exc, skip_frames=1))
            return
        shadowed = shadowing_attributes(self.instance)
        self._reply(identity, seq, P.REPLY_OK, [P.encode({"shadowed": shadowed})])

    def _call(self, identity: bytes, request: P.Request) -> None:
        seq, name = _named(request)
        if not request.payload:
            raise P.BadMessage("CALL carries a name and pickled arguments")
        try:
            args, kwargs = _arguments(request.payload, f"the arguments of `{name}`")
        except DeserializeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, error_frames("deserialize", exc))
            return
        try:
            method = getattr(self.instance, name)
        except AttributeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, error_frames("attribute", exc))
            return
        try:
            result = method(*args, **kwargs)
        except BaseException as exc:
            self._user_error(identity, seq, exc)
            return
        self._reply_value(identity, seq, result, f"the return value of `{name}`")

    def _fail_init(self, identity: bytes, seq: bytes, frames: list[Any]) -> None:
        """Answer a failed INIT and stay until the client releases this job or goes away.

        Exiting at once would close the connection right behind the reply, and a client whose
        socket sees the disconnect before it read the reply loses the reply with the pipe.
        """
        self.failed_at = time.monotonic()
        self._reply(identity, seq, P.REPLY_ERROR, frames)

    def _user_error(self, identity: bytes, seq: bytes, exc: BaseException) -> None:
        """The actor raised: log the traceback, tell the worker (for the monitor) and the caller."""
        self._report_error(exc)
        self._reply(identity, seq, P.REPLY_ERROR, error_frames("user", exc, skip_frames=1))

    def _report_error(self, exc: BaseException) -> None:
        """Log the actor's traceback and tell the worker (for the monitor)."""
        traceback.print_exc()
        info = error_info("user", exc, skip_frames=1)
        report = {
            "job_id": self.job_id,
            "type": info["type"][:512],
            "message": info["message"][:4096],
            "traceback": info["traceback"][-_REPORTED_TEXT:],
        }
        self._to_worker(P.JOB_ERROR, report)

    def _reply_value(self, identity: bytes, seq: bytes, value: Any, what: str) -> None:
        """Send ``value`` back, or a serialize error naming ``what`` if it cannot be pickled."""
        try:
            out = dumps(value, what)
            size = payload_size(out)
            if size > self.reply_limit:
                raise SerializeError(
                    f"{what} is {size / 2**20:.1f} MiB, more than the {self.reply_limit / 2**20:g}"
                    " MiB a message may carry (XPARL_MAX_MESSAGE_MB on the client); return less "
                    "per call or raise the limit"
                )
        except SerializeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, error_frames("serialize", exc))
            return
        self._reply(identity, seq, P.REPLY_OK, out)

    def _get(self, identity: bytes, request: P.Request) -> None:
        seq, name = _named(request)
        try:
            value = getattr(self.instance, name)
        except AttributeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, error_frames("attribute", exc))
            return
        except BaseException as exc:
            self._user_error(identity, seq, exc)
            return
        self._reply_value(identity, seq, value, f"the attribute `{name}`")

    def _set(self, identity: bytes, request: P.Request) -> None:
        seq, name = _named(request)
        if not request.payload:
            raise P.BadMessage("SET carries a name and a pickled value")
        try:
            value = loads(request.payload, f"the value for attribute `{name}`")
            setattr(self.instance, name, value)
        except DeserializeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, error_frames("deserialize", exc))
            return
        except BaseException as exc:
            self._user_error(identity, seq, exc)
            return
        self._reply(identity, seq, P.REPLY_OK, [])

    def _release(self, identity: bytes, request: P.Request) -> None:
        self._reply(identity, request.seq, P.REPLY_OK, [])
        self.exit(self._exit_code())

    def _ping(self, identity: bytes, request: P.Request) -> None:
        self._reply(identity, request.seq, P.REPLY_OK, [])

    _free_ops: ClassVar[dict[bytes, Callable[..., None]]] = {P.OP_HELLO: _hello, P.OP_INIT: _init}
    _owner_ops: ClassVar[dict[bytes, Callable[..., None]]] = {
        P.OP_HELLO: _hello,
        P.OP_CALL: _call,
        P.OP_GET: _get,
        P.OP_SET: _set,
        P.OP_RELEASE: _release,
        P.OP_PING: _ping,
    }

    def exit(self, code: int) -> None:
        """Flush output, give queued replies a moment to leave, and end the process.

        Processes the actor started stay in this job's process group; the worker ends the group
        once it has seen this process exit.
        """
        sys.stdout.flush()
        sys.stderr.flush()
        with self.lock:
            self.socket.close(linger=500)
            self.worker.close(linger=500)
        if code != 0:
            # The error reply just queued (a failed constructor's) must leave before os._exit:
            # terminating the context waits for it, up to the linger time.
            flusher = threading.Thread(target=self.context.term, daemon=True)
            flusher.start()
            flusher.join(0.5)
        os._exit(code)


class _Log:
    """Refusal notes of a job go to its own log (stderr)."""

    def warning(self, fmt: str, *args: Any) -> None:
        print("[xparl] " + fmt % args, file=sys.stderr, flush=True)


def _arguments(frames: list[Any], what: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Unpickle the ``(args, kwargs)`` pair of a constructor or call.

    Raises:
        DeserializeError: the frames do not unpickle, or not to a tuple and a dict of names.
    """
    value = loads(frames, what)
    if not (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], (tuple, list))
        and isinstance(value[1], dict)
        and all(isinstance(key, str) for key in value[1])
    ):
        raise DeserializeError(
            f"{what} must be an (args, kwargs) pair of a tuple and a dict with string keys, "
            f"not a {type(value).__name__}"
        )
    return tuple(value[0]), value[1]


def _named(request: P.Request) -> tuple[bytes, str]:
    """The seq and attribute name of a call, read or write (which must name one)."""
    if not request.name:
        raise P.BadMessage("a call, read or write names an attribute")
    return request.seq, request.name


def main(argv: list[str] | None = None) -> None:
    """Entry point of a job process; the cluster secret arrives as the first line of stdin."""
    parser = argparse.ArgumentParser(prog="python -m parl.remote.job")
    parser.add_argument("--worker", required=True)
    parser.add_argument("--job-id", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--advertise-host", required=True)
    parser.add_argument("--worker-pid", type=int, default=None)
    parser.add_argument("--mode", choices=[m.value for m in Mode], required=True)
    args = parser.parse_args(argv)
    secret = sys.stdin.readline().strip() or None
    raise_fd_limit()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    security = Security.for_mode(Mode(args.mode), secret)
    job = Job(
        args.job_id,
        args.worker,
        args.host,
        args.advertise_host,
        Timeouts(),
        security,
        Limits(),
        args.worker_pid,
    )
    threading.Thread(target=job.watchdog, name="xparl-watchdog", daemon=True).start()
    job.announce()
    try:
        job.serve()
    except BaseException as exc:  # serve() returns only by ending the process
        job.die_of(exc)


def _disk_full(job_id: str, exc: OSError) -> str:
    """Say which disk filled, and how much is free on it: the job's log's (its stdout), or
    the file the error names."""
    where = exc.filename or _log_path()
    try:
        disk = os.statvfs(where) if where else None
    except OSError:
        disk = None
    shown = f"{disk.f_bavail * disk.f_frsize / 2**20:.1f} MiB" if disk else "unknown"
    return (
        f"job {job_id} died: no space left on the disk holding {where or 'its log'} ({shown} "
        f"free; {exc.strerror}). Free space there, or give the worker a data folder on another "
        "disk (XPARL_HOME), and create a new actor."
    )


def _log_path() -> str | None:
    """The file the job's output goes to (its log), where the system says."""
    try:
        return os.readlink(f"/proc/self/fd/{sys.stdout.fileno()}")
    except (OSError, ValueError):
        return None


if __name__ == "__main__":
    main()
