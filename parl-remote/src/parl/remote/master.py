"""The xparl master: registers workers and clients, schedules actors onto warm jobs, and reports
status. It never proxies a call: clients talk to their jobs directly.

Run as ``python -m parl.remote.master --port P``; ``xparl start`` and ``parl.connect()`` do that.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from parl.remote import protocol as P
from parl.remote.config import Timeouts, default_host

import zmq

logger = logging.getLogger("parl.remote.master")


@dataclass
class _Worker:
    worker_id: str
    identity: bytes
    hostname: str
    host: str
    pid: int
    address: str
    cpu_total: int
    gpus: list[str]
    log_dir: str
    cpu_free: int = 0
    gpu_free: list[str] = field(default_factory=list)
    idle_jobs: deque[dict[str, Any]] = field(default_factory=deque)
    last_seen: float = field(default_factory=time.monotonic)


@dataclass
class _Client:
    client_id: str
    identity: bytes
    hostname: str
    pid: int
    script: str
    actors: int = 0
    last_seen: float = field(default_factory=time.monotonic)
    connected_at: float = field(default_factory=time.time)


@dataclass
class _Pending:
    identity: bytes
    client_id: str
    request_id: str
    n_gpu: int
    deadline: float


class Master:
    """Resource bookkeeping and scheduling over one ROUTER socket.

    Args:
        host: Host to bind.
        port: Port to bind (0: a free port).
        timeouts: Heartbeat timeouts for workers and clients.
        port_range: ``LOW-HIGH`` range used when ``port`` is 0.
        advertise_host: Host name others dial to reach this master.
    """

    def __init__(
        self,
        host: str,
        port: int,
        timeouts: Timeouts,
        port_range: str | None = None,
        advertise_host: str | None = None,
    ) -> None:
        self.timeouts = timeouts
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.linger = 0
        self.socket.setsockopt(zmq.ROUTER_HANDOVER, 1)
        self.port = P.bind_socket(self.socket, host, port_range, port)
        self.address = f"{advertise_host or host}:{self.port}"
        self.workers: dict[str, _Worker] = {}
        self.clients: dict[str, _Client] = {}
        self.jobs: dict[str, dict[str, Any]] = {}  # job id -> allocation of a live actor
        self.pending: list[_Pending] = []
        self.started_at = time.time()
        self.running = True
        self.bad_messages = 0
        self.owner_pid: int | None = None
        self.last_housekeeping = time.monotonic()

    # ------------------------------------------------------------------ main loop
    def serve(self) -> None:
        """Answer messages until SIGTERM/SIGINT or a shutdown message."""
        poll_ms = max(20, int(self.timeouts.heartbeat_interval * 1000 / 2))
        while self.running:
            if self.socket.poll(poll_ms):
                while True:
                    try:
                        frames = self.socket.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self._dispatch(frames)
            self._housekeeping()
        self.socket.close(linger=200)
        self.context.term()

    def _dispatch(self, frames: list[bytes]) -> None:
        if len(frames) < 2:
            self.bad_messages += 1
            return
        identity, tag = frames[0], frames[1]
        handler = self._handlers.get(tag)
        try:
            payload = P.decode(frames[2]) if len(frames) > 2 else {}
            if handler is None:
                raise ValueError(f"unknown message tag {tag[:40]!r}")
            handler(self, identity, payload)
        except Exception as exc:
            self.bad_messages += 1
            logger.warning("ignored a malformed message (%s: %s)", type(exc).__name__, exc)
            self._send(identity, P.ERROR, {"kind": "bad_message", "message": str(exc)[:500]})

    def _send(self, identity: bytes, tag: bytes, payload: dict[str, Any]) -> None:
        try:
            self.socket.send_multipart([identity, tag, P.encode(payload)], zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            logger.warning("could not send %r: %s", tag, exc)

    def _version_error(self, info: dict[str, Any]) -> str | None:
        mine = P.identity()
        theirs = (str(info.get("version")), str(info.get("python")), info.get("protocol"))
        if theirs == (mine["version"], mine["python"], mine["protocol"]):
            return None
        return (
            f"version mismatch: the master at {self.address} runs parl-remote {mine['version']} "
            f"on Python {mine['python']} (protocol {mine['protocol']}), the peer runs parl-remote "
            f"{theirs[0]} on Python {theirs[1]} (protocol {theirs[2]}). Install the same "
            "parl-remote version under the same Python major.minor on every machine."
        )

    # ------------------------------------------------------------------ workers
    def _on_register_worker(self, identity: bytes, msg: dict[str, Any]) -> None:
        error = self._version_error(msg)
        if error:
            self._send(identity, P.ERROR, {"kind": "version", "message": error})
            return
        gpus = [str(g) for g in msg.get("gpus", [])]
        worker = _Worker(
            worker_id=str(msg["worker_id"]),
            identity=identity,
            hostname=str(msg.get("hostname", "")),
            host=str(msg["host"]),
            pid=int(msg.get("pid", 0)),
            address=str(msg["address"]),
            cpu_total=int(msg["cpu_num"]),
            gpus=gpus,
            log_dir=str(msg.get("log_dir", "")),
        )
        worker.cpu_free = worker.cpu_total
        worker.gpu_free = list(gpus)
        self.workers[worker.worker_id] = worker
        logger.info("worker %s: %d CPUs, GPUs %s", worker.worker_id, worker.cpu_total, gpus)
        self._send(identity, P.ACK, {"master": self.address})

    def _worker(self, msg: dict[str, Any], identity: bytes) -> _Worker | None:
        worker = self.workers.get(str(msg.get("worker_id")))
        if worker is None:
            self._send(identity, P.ERROR, {"kind": "unknown_worker", "message": "not registered"})
            return None
        worker.last_seen = time.monotonic()
        return worker

    def _on_worker_heartbeat(self, identity: bytes, msg: dict[str, Any]) -> None:
        if self._worker(msg, identity) is not None:
            self._send(identity, P.ACK, {})

    def _on_job_ready(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(msg, identity)
        if worker is None:
            return
        worker.idle_jobs.append(
            {"job_id": str(msg["job_id"]), "address": str(msg["address"]), "pid": msg.get("pid")}
        )
        self._serve_pending()

    def _on_job_exited(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(msg, identity)
        if worker is None:
            return
        job_id = str(msg["job_id"])
        worker.idle_jobs = deque(j for j in worker.idle_jobs if j["job_id"] != job_id)
        allocation = self._free(job_id)
        if allocation is not None and msg.get("reason") != "released":
            client = self.clients.get(allocation["client_id"])
            if client is not None:
                self._send(
                    client.identity,
                    P.ACTOR_DIED,
                    {"job_id": job_id, "reason": msg.get("reason"), "message": msg.get("message")},
                )
        self._serve_pending()

    def _drop_worker(self, worker: _Worker, why: str) -> None:
        logger.warning("dropping worker %s: %s", worker.worker_id, why)
        del self.workers[worker.worker_id]
        for job_id, allocation in list(self.jobs.items()):
            if allocation["worker_id"] != worker.worker_id:
                continue
            del self.jobs[job_id]
            client = self.clients.get(allocation["client_id"])
            if client is not None:
                message = (
                    f"the worker {worker.worker_id} on {worker.hostname} ({worker.host}) that ran "
                    f"actor {job_id} was lost: {why}"
                )
                self._send(
                    client.identity,
                    P.ACTOR_DIED,
                    {"job_id": job_id, "reason": "worker_lost", "message": message},
                )

    # ------------------------------------------------------------------ clients
    def _on_hello(self, identity: bytes, msg: dict[str, Any]) -> None:
        error = self._version_error(msg)
        if error:
            self._send(identity, P.ERROR, {"kind": "version", "message": error})
            return
        client_id = str(msg["client_id"])
        self.clients[client_id] = _Client(
            client_id=client_id,
            identity=identity,
            hostname=str(msg.get("hostname", "")),
            pid=int(msg.get("pid", 0)),
            script=str(msg.get("script", "")),
        )
        self._send(identity, P.ACK, {"master": self.address, **P.identity()})

    def _on_client_heartbeat(self, identity: bytes, msg: dict[str, Any]) -> None:
        client = self.clients.get(str(msg.get("client_id")))
        if client is None:
            self._send(identity, P.ERROR, {"kind": "unknown_client", "message": "not connected"})
            return
        client.identity = identity
        client.last_seen = time.monotonic()
        client.actors = int(msg.get("actors", 0))
        self._send(identity, P.ACK, {})

    def _on_request_actor(self, identity: bytes, msg: dict[str, Any]) -> None:
        client_id = str(msg["client_id"])
        request_id = str(msg["request_id"])
        n_gpu = int(msg.get("n_gpu", 0))
        if client_id not in self.clients:
            self._send(
                identity,
                P.ERROR,
                {
                    "kind": "unknown_client",
                    "request_id": request_id,
                    "message": "the client is not connected to this master",
                },
            )
            return
        most_gpus = max((len(w.gpus) for w in self.workers.values()), default=0)
        if n_gpu > 0 and n_gpu > most_gpus:
            self._send(
                identity,
                P.ERROR,
                {
                    "kind": "resource",
                    "request_id": request_id,
                    "message": f"n_gpu={n_gpu} but no worker of the cluster at {self.address} "
                    f"has that many GPUs (the most on one worker: {most_gpus}); start a worker "
                    "with "
                    "`xparl connect --address ... --gpu 0,1,...` or lower n_gpu",
                },
            )
            return
        timeout = float(msg.get("timeout", self.timeouts.resource_timeout))
        deadline = time.monotonic() + timeout
        self.pending.append(_Pending(identity, client_id, request_id, n_gpu, deadline))
        self._serve_pending()

    def _on_release_actor(self, identity: bytes, msg: dict[str, Any]) -> None:
        job_id = str(msg["job_id"])
        allocation = self.jobs.get(job_id)
        if allocation is None:
            return
        self._free(job_id)
        worker = self.workers.get(allocation["worker_id"])
        if worker is not None:
            self._send(worker.identity, P.KILL_JOB, {"job_id": job_id})
        self._serve_pending()

    def _on_goodbye(self, identity: bytes, msg: dict[str, Any]) -> None:
        client = self.clients.pop(str(msg.get("client_id")), None)
        if client is None:
            return
        for job_id, allocation in list(self.jobs.items()):
            if allocation["client_id"] == client.client_id:
                self._on_release_actor(identity, {"job_id": job_id})

    def _on_status(self, identity: bytes, msg: dict[str, Any]) -> None:
        self._send(identity, P.STATUS, self.status())

    def _on_shutdown(self, identity: bytes, msg: dict[str, Any]) -> None:
        for worker in self.workers.values():
            self._send(worker.identity, P.SHUTDOWN, {})
        self._send(identity, P.ACK, {})
        self.running = False

    def _on_ack(self, identity: bytes, msg: dict[str, Any]) -> None:
        """Acks need no answer."""

    _handlers: ClassVar[dict[bytes, Callable[[Master, bytes, dict[str, Any]], None]]] = {
        P.REGISTER_WORKER: _on_register_worker,
        P.WORKER_HEARTBEAT: _on_worker_heartbeat,
        P.JOB_READY: _on_job_ready,
        P.JOB_EXITED: _on_job_exited,
        P.HELLO: _on_hello,
        P.CLIENT_HEARTBEAT: _on_client_heartbeat,
        P.REQUEST_ACTOR: _on_request_actor,
        P.RELEASE_ACTOR: _on_release_actor,
        P.GOODBYE: _on_goodbye,
        P.STATUS: _on_status,
        P.SHUTDOWN: _on_shutdown,
        P.ACK: _on_ack,
    }

    # ------------------------------------------------------------------ scheduling
    def _free(self, job_id: str) -> dict[str, Any] | None:
        allocation = self.jobs.pop(job_id, None)
        if allocation is None:
            return None
        worker = self.workers.get(allocation["worker_id"])
        if worker is not None:
            worker.cpu_free += allocation["cpus"]
            worker.gpu_free.extend(allocation["gpus"])
        return allocation

    def _pick(self, n_gpu: int) -> _Worker | None:
        best: _Worker | None = None
        for worker in self.workers.values():
            if not worker.idle_jobs:
                continue
            if n_gpu and len(worker.gpu_free) < n_gpu:
                continue
            if not n_gpu and worker.cpu_free < 1:
                continue
            if best is None or worker.cpu_free > best.cpu_free:
                best = worker
        return best

    def _serve_pending(self) -> None:
        still_waiting = []
        for request in self.pending:
            if request.client_id not in self.clients:
                continue
            worker = self._pick(request.n_gpu)
            if worker is None:
                still_waiting.append(request)
                continue
            job = worker.idle_jobs.popleft()
            gpus = sorted(worker.gpu_free, key=_gpu_sort_key)[: request.n_gpu]
            for gpu in gpus:
                worker.gpu_free.remove(gpu)
            cpus = 0 if request.n_gpu else 1
            worker.cpu_free -= cpus
            self.jobs[job["job_id"]] = {
                "worker_id": worker.worker_id,
                "client_id": request.client_id,
                "cpus": cpus,
                "gpus": gpus,
                "address": job["address"],
                "pid": job["pid"],
                "since": time.time(),
            }
            self._send(
                request.identity,
                P.REQUEST_ACTOR,
                {
                    "request_id": request.request_id,
                    "job_id": job["job_id"],
                    "address": job["address"],
                    "pid": job["pid"],
                    "gpus": gpus,
                    "worker_id": worker.worker_id,
                    "hostname": worker.hostname,
                },
            )
        self.pending = still_waiting

    def _housekeeping(self) -> None:
        if self.owner_pid is not None and not _alive(self.owner_pid):
            logger.warning("the process %d that owns this cluster exited; stopping", self.owner_pid)
            self._on_shutdown(b"", {})
            return
        now = time.monotonic()
        limit = self.timeouts.heartbeat_timeout
        if now - self.last_housekeeping > limit / 2:
            # This process was stalled (suspend, swap): give every peer a new window.
            for worker in self.workers.values():
                worker.last_seen = now
            for client in self.clients.values():
                client.last_seen = now
        self.last_housekeeping = now
        for worker in list(self.workers.values()):
            if now - worker.last_seen > limit:
                self._drop_worker(worker, f"no heartbeat for {now - worker.last_seen:.1f} s")
        for client in list(self.clients.values()):
            if now - client.last_seen > limit:
                logger.warning("client %s lost; releasing its actors", client.client_id)
                del self.clients[client.client_id]
                for job_id, allocation in list(self.jobs.items()):
                    if allocation["client_id"] == client.client_id:
                        self._on_release_actor(b"", {"job_id": job_id})
        expired = [r for r in self.pending if r.deadline <= now]
        if expired:
            self.pending = [r for r in self.pending if r.deadline > now]
            for request in expired:
                self._send(
                    request.identity,
                    P.ERROR,
                    {
                        "kind": "resource",
                        "request_id": request.request_id,
                        "message": self._no_resource_message(request.n_gpu),
                    },
                )

    def _no_resource_message(self, n_gpu: int) -> str:
        status = self.status()
        what = f"{n_gpu} GPU(s)" if n_gpu else "a CPU"
        return (
            f"no worker of the cluster at {self.address} had {what} vacant within the resource "
            f"timeout: {status['cpus_used']} of {status['cpus_total']} CPUs and "
            f"{status['gpus_used']} of {status['gpus_total']} GPUs are in use by actors. Release "
            "actors you no longer need (`del actor`), add CPUs with `xparl connect --address "
            f"{self.address} --cpu_num N`, or raise the timeout (XPARL_RESOURCE_TIMEOUT or "
            "parl.connect(..., resource_timeout=...))."
        )

    def status(self) -> dict[str, Any]:
        """A JSON-able snapshot of workers, clients, actors and resources."""
        workers: list[dict[str, Any]] = [
            {
                "worker_id": w.worker_id,
                "hostname": w.hostname,
                "host": w.host,
                "pid": w.pid,
                "address": w.address,
                "cpus_total": w.cpu_total,
                "cpus_used": w.cpu_total - w.cpu_free,
                "gpus": w.gpus,
                "gpus_used": sorted(set(w.gpus) - set(w.gpu_free), key=_gpu_sort_key),
                "idle_jobs": len(w.idle_jobs),
                "log_dir": w.log_dir,
            }
            for w in self.workers.values()
        ]
        clients = [
            {
                "client_id": c.client_id,
                "hostname": c.hostname,
                "pid": c.pid,
                "script": c.script,
                "actors": c.actors,
                "connected_s": round(time.time() - c.connected_at, 1),
            }
            for c in self.clients.values()
        ]
        cpus_total = sum(w["cpus_total"] for w in workers)
        cpus_used = sum(w["cpus_used"] for w in workers)
        gpus_total = sum(len(w["gpus"]) for w in workers)
        gpus_used = sum(len(w["gpus_used"]) for w in workers)
        return {
            "address": self.address,
            "version": P.remote_version(),
            "python": P.python_version(),
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started_at, 1),
            "cpus_total": cpus_total,
            "cpus_used": cpus_used,
            "cpus_vacant": cpus_total - cpus_used,
            "gpus_total": gpus_total,
            "gpus_used": gpus_used,
            "gpus_vacant": gpus_total - gpus_used,
            "workers": workers,
            "clients": clients,
            "actors": [{"job_id": job_id, **a} for job_id, a in self.jobs.items()],
            "pending_requests": len(self.pending),
            "bad_messages": self.bad_messages,
            "monitor_url": None,
        }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _gpu_sort_key(gpu: str) -> tuple[int, str]:
    return (int(gpu), gpu) if gpu.isdigit() else (1 << 30, gpu)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the master process."""
    parser = argparse.ArgumentParser(prog="python -m parl.remote.master")
    parser.add_argument("--host", default=default_host())
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--advertise-host", default=None)
    parser.add_argument("--port-range", default=None)
    parser.add_argument("--ready-file", default=None)
    parser.add_argument("--owner-pid", type=int, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s master %(levelname)s %(message)s"
    )
    master = Master(args.host, args.port, Timeouts(), args.port_range, args.advertise_host)
    master.owner_pid = args.owner_pid

    def stop(signum: int, frame: Any) -> None:
        master.running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.ready_file:
        _write_atomic(
            Path(args.ready_file),
            {"pid": os.getpid(), "port": master.port, "address": master.address},
        )
    logger.info("master listening on %s", master.address)
    master.serve()


def _write_atomic(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload))
    tmp.replace(path)


if __name__ == "__main__":
    main()
