"""A job process: hosts exactly one actor for its client, then exits.

A worker starts jobs ahead of time (the warm pool). A job binds its own ROUTER socket, tells the
worker it is ready, and waits for its client's INIT (files, class, arguments). It then answers
calls, attribute reads and writes until the client releases it or disconnects. A watchdog thread
exits the job when its worker dies and enforces ``max_memory``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from parl.remote import protocol as P
from parl.remote.config import Timeouts
from parl.remote.exceptions import DeserializeError, SerializeError
from parl.remote.serialization import dumps, loads

import cloudpickle
import zmq
from zmq.utils.monitor import recv_monitor_message


def error_payload(kind: str, exc: BaseException, skip_frames: int = 0) -> bytes:
    """Describe ``exc`` for the caller: its type, message, traceback text and (if it pickles)
    the exception itself, so the caller can re-raise the original type."""
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    try:
        exc_bytes: bytes | None = cloudpickle.dumps(exc, protocol=5)
    except Exception:
        exc_bytes = None
    return pickle.dumps(
        {
            "kind": kind,
            "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
            "message": str(exc),
            "traceback": text,
            "exc": exc_bytes,
        },
        protocol=5,
    )


class Job:
    """The actor host inside a job process.

    Args:
        job_id: Id given by the worker (also the actor's log name).
        worker_endpoint: The worker's job socket.
        host: Host to bind.
        advertise_host: Host the client dials.
        timeouts: Watchdog intervals.
    """

    def __init__(
        self, job_id: str, worker_endpoint: str, host: str, advertise_host: str, timeouts: Timeouts
    ) -> None:
        self.job_id = job_id
        self.timeouts = timeouts
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.linger = 1000
        port = P.bind_socket(self.socket, host)
        self.address = f"{advertise_host}:{port}"
        self.monitor = self.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.worker = self.context.socket(zmq.DEALER)
        self.worker.linger = 1000
        self.worker.connect(worker_endpoint)
        self.lock = threading.Lock()
        self.owner: bytes | None = None
        self.instance: Any = None
        self.max_memory_mb: float | None = None
        self.baseline_rss = 0
        self.parent = os.getppid()

    def announce(self) -> None:
        """Tell the worker this job is ready to host an actor."""
        self.worker.send_multipart(
            [
                P.JOB_READY,
                P.encode({"job_id": self.job_id, "address": self.address, "pid": os.getpid()}),
            ]
        )

    # ------------------------------------------------------------------ watchdog
    def watchdog(self) -> None:
        """Exit when the worker dies; kill the actor when it outgrows ``max_memory``."""
        interval = min(0.2, self.timeouts.memory_check_interval)
        while True:
            time.sleep(interval)
            if os.getppid() != self.parent:
                os._exit(3)
            limit = self.max_memory_mb
            if limit is None:
                continue
            rss = _rss()
            grown_mb = (rss - self.baseline_rss) / 2**20
            if grown_mb > limit:
                self._die_of_memory(rss, grown_mb, limit)

    def _die_of_memory(self, rss: int, grown_mb: float, limit: float) -> None:
        message = (
            f"actor {self.job_id} was killed: its memory grew by {grown_mb:.0f} MB "
            f"(RSS {rss / 2**20:.0f} MB), more than max_memory={limit:g} MB. Raise max_memory "
            "in @parl.remote_class(max_memory=...) or make the actor use less memory."
        )
        print(f"[xparl] {message}", file=sys.stderr, flush=True)
        payload = P.encode({"reason": "max_memory", "message": message})
        with self.lock:
            if self.owner is not None:
                self.socket.send_multipart([self.owner, b"", P.REPLY_DIED, payload])
            self.worker.send_multipart(
                [
                    P.JOB_EXITED,
                    P.encode({"job_id": self.job_id, "reason": "max_memory", "message": message}),
                ]
            )
        time.sleep(0.1)
        os._exit(4)

    # ------------------------------------------------------------------ serving
    def _reply(self, identity: bytes, seq: bytes, status: bytes, frames: list[Any]) -> None:
        with self.lock:
            self.socket.send_multipart([identity, seq, status, *frames], copy=False)

    def serve(self) -> None:
        """Answer the client until it releases this actor or disconnects."""
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        poller.register(self.monitor, zmq.POLLIN)
        while True:
            events = dict(poller.poll())
            if self.monitor in events:
                recv_monitor_message(self.monitor)
                if self.owner is not None:
                    print("[xparl] the client disconnected; exiting", file=sys.stderr, flush=True)
                    self.exit(0)
            if self.socket not in events:
                continue
            frames = self.socket.recv_multipart(copy=False)
            if len(frames) < 3:
                continue
            identity, seq, op = frames[0].bytes, frames[1].bytes, frames[2].bytes
            if self.owner is None:
                if op != P.OP_INIT:
                    continue
                self.owner = identity
                self._init(identity, seq, frames[3:])
            elif identity != self.owner:
                continue
            elif op == P.OP_CALL:
                self._call(identity, seq, frames[3].bytes.decode(), frames[4:])
            elif op == P.OP_GET:
                self._get(identity, seq, frames[3].bytes.decode())
            elif op == P.OP_SET:
                self._set(identity, seq, frames[3].bytes.decode(), frames[4:])
            elif op == P.OP_RELEASE:
                self._reply(identity, seq, P.REPLY_OK, [])
                self.exit(0)
            elif op == P.OP_PING:
                self._reply(identity, seq, P.REPLY_OK, [])

    def _init(self, identity: bytes, seq: bytes, frames: list[Any]) -> None:
        spec = P.decode(frames[0].bytes)
        max_memory = spec.get("max_memory")
        if max_memory:
            self.baseline_rss = _rss()
            self.max_memory_mb = float(max_memory)
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in spec.get("gpus", []))
        os.environ["XPARL_CLIENT_ID"] = str(spec.get("client_id", ""))
        files_blob = frames[1].bytes
        if files_blob:
            _write_files(pickle.loads(files_blob), Path.cwd())
        sys.path.insert(0, os.getcwd())
        name = spec.get("class_name", "?")
        print(f"[xparl] job {self.job_id} hosts an actor of class {name}", flush=True)
        try:
            cls = loads([frames[2]], f"the class {name}")
            args, kwargs = loads(frames[3:], f"the arguments of {name}()")
        except DeserializeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("deserialize", exc)])
            self.exit(1)
        try:
            self.instance = cls(*args, **kwargs)
        except BaseException as exc:
            traceback.print_exc()
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("user", exc, skip_frames=1)])
            self.exit(1)
        self._reply(identity, seq, P.REPLY_OK, [])

    def _call(self, identity: bytes, seq: bytes, name: str, frames: list[Any]) -> None:
        try:
            args, kwargs = loads(frames, f"the arguments of `{name}`")
        except DeserializeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("deserialize", exc)])
            return
        try:
            method = getattr(self.instance, name)
        except AttributeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("attribute", exc)])
            return
        try:
            result = method(*args, **kwargs)
        except BaseException as exc:
            traceback.print_exc()
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("user", exc, skip_frames=1)])
            return
        self._reply_value(identity, seq, result, f"the return value of `{name}`")

    def _reply_value(self, identity: bytes, seq: bytes, value: Any, what: str) -> None:
        """Send ``value`` back, or a serialize error naming ``what`` if it cannot be pickled."""
        try:
            out = dumps(value, what)
        except SerializeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("serialize", exc)])
            return
        self._reply(identity, seq, P.REPLY_OK, out)

    def _get(self, identity: bytes, seq: bytes, name: str) -> None:
        try:
            value = getattr(self.instance, name)
        except AttributeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("attribute", exc)])
            return
        except BaseException as exc:
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("user", exc, skip_frames=1)])
            return
        self._reply_value(identity, seq, value, f"the attribute `{name}`")

    def _set(self, identity: bytes, seq: bytes, name: str, frames: list[Any]) -> None:
        try:
            value = loads(frames, f"the value for attribute `{name}`")
            setattr(self.instance, name, value)
        except DeserializeError as exc:
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("deserialize", exc)])
            return
        except BaseException as exc:
            self._reply(identity, seq, P.REPLY_ERROR, [error_payload("user", exc, skip_frames=1)])
            return
        self._reply(identity, seq, P.REPLY_OK, [])

    def exit(self, code: int) -> None:
        """Flush output, give queued replies a moment to leave, and end the process."""
        sys.stdout.flush()
        sys.stderr.flush()
        with self.lock:
            self.socket.close(linger=500)
            self.worker.close(linger=500)
        os._exit(code)


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def _write_files(files: dict[str, bytes], root: Path) -> None:
    base = root.resolve()
    for relative, content in files.items():
        target = (base / relative).resolve()
        if base not in target.parents:
            raise ValueError(f"refusing to write a distributed file outside the job: {relative}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def main(argv: list[str] | None = None) -> None:
    """Entry point of a job process."""
    parser = argparse.ArgumentParser(prog="python -m parl.remote.job")
    parser.add_argument("--worker", required=True)
    parser.add_argument("--job-id", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--advertise-host", required=True)
    args = parser.parse_args(argv)
    job = Job(args.job_id, args.worker, args.host, args.advertise_host, Timeouts())
    threading.Thread(target=job.watchdog, name="xparl-watchdog", daemon=True).start()
    job.announce()
    job.serve()


if __name__ == "__main__":
    main()
