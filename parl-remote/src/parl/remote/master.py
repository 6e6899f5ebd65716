"""The xparl master: registers workers and clients, schedules actors onto warm jobs, and reports
status. It never proxies a call: clients talk to their jobs directly.

The master keeps books, not actors: every worker heartbeat carries the worker's whole state
(warm jobs, jobs hosting actors), and the master rebuilds its view from it. So a stalled
master, a lost message or a restarted master costs no actor: workers register again with what
they run, clients say hello again, and scheduling goes on. A silent worker is only left out of
scheduling; its actors are judged by their own clients, which talk to them directly.

Run as ``python -m parl.remote.master --port P`` with the cluster secret on stdin;
``xparl start`` and ``parl.connect()`` do that.
"""

from __future__ import annotations

import argparse
import hmac
import logging
import os
import signal
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from parl.core.files import write_atomic
from parl.remote import protocol as P
from parl.remote.config import Timeouts, default_host
from parl.remote.processes import process_exists
from parl.remote.security import Mode, Security

import zmq

logger = logging.getLogger("parl.remote.master")

_MAX_GONE = 100_000  # ids of exited jobs remembered, so a late report cannot revive one
_MAX_JOBS = 4096  # jobs one worker may report


@dataclass
class _Worker:
    worker_id: str
    token: str
    identity: bytes
    hostname: str
    host: str
    pid: int
    address: str
    cpu_total: int
    gpus: list[str]
    log_dir: str
    ready: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_seen: float = field(default_factory=time.monotonic)
    # When a client last could not reach one of its jobs: no grants until the worker has
    # reported for a while after that (a report queued before its death must not count).
    held_since: float | None = None
    lost_logged: bool = False
    seq: int = -1  # of the newest state applied: an older one arriving late is ignored
    bad_messages: int = 0
    refused: int = 0


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
class _Allocation:
    job_id: str
    worker_id: str
    client_id: str
    cpus: int
    gpus: list[str]
    address: str
    pid: int | None
    claimed: bool = False
    since: float = field(default_factory=time.time)


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
        security: The cluster's security (encryption is forced beyond loopback).
        port_range: ``LOW-HIGH`` range used when ``port`` is 0.
        advertise_host: Host name others dial to reach this master.
    """

    def __init__(
        self,
        host: str,
        port: int,
        timeouts: Timeouts,
        security: Security,
        port_range: str | None = None,
        advertise_host: str | None = None,
    ) -> None:
        self.timeouts = timeouts
        self.security = security.binding(host)
        self.context = zmq.Context()
        self.gatekeeper = self.security.start_gatekeeper(self.context)
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.linger = 0
        P.bound_inbound(self.socket, P.CONTROL_MAX_BYTES)
        self.security.serve_control(self.socket)
        self.port = P.bind_socket(self.socket, host, port_range, port)
        self.watch = P.Watch(self.socket, 0, "the master refused a connection", logger, bound=True)
        self.address = f"{advertise_host or host}:{self.port}"
        self.workers: dict[str, _Worker] = {}
        self.clients: dict[str, _Client] = {}
        self.allocations: dict[str, _Allocation] = {}
        self.gone: OrderedDict[str, None] = OrderedDict()
        self.pending: list[_Pending] = []
        self.started_at = time.time()
        self.running = True
        self.bad_messages = 0
        self.refused_requests = 0
        self.owner_pid: int | None = None
        self.last_housekeeping = time.monotonic()
        self.fresh_s = max(3 * timeouts.heartbeat_interval, 1.5)
        self.forget_s = max(60.0, 10 * timeouts.heartbeat_timeout)

    # ------------------------------------------------------------------ main loop
    def serve(self) -> None:
        """Answer messages until SIGTERM/SIGINT."""
        poll_ms = max(20, int(self.timeouts.heartbeat_interval * 1000 / 2))
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        poller.register(self.watch.socket, zmq.POLLIN)
        while self.running:
            events = dict(poller.poll(poll_ms))
            if self.socket in events:
                for _ in range(P.MAX_BURST):  # a flood cannot hold up housekeeping
                    try:
                        frames = P.recv_bounded(self.socket, 3)
                    except zmq.Again:
                        break
                    self._dispatch(frames)
            self.watch.drain()
            self._housekeeping()
        self.watch.close(self.socket)
        self.socket.close(linger=200)
        if self.gatekeeper is not None:
            self.gatekeeper.stop()
        self.context.term()

    def _dispatch(self, frames: list[bytes] | None) -> None:
        identity = frames[0] if frames else b""
        try:
            if frames is None or len(frames) != 3:
                raise P.BadMessage("a message has a tag and one JSON frame")
            handler = self._handlers.get(frames[1])
            if handler is None:
                raise P.BadMessage(f"unknown message tag {frames[1][:40]!r}")
            handler(self, identity, P.decode(frames[2]))
        except (P.BadMessage, UnicodeDecodeError) as exc:
            self.bad_messages += 1
            if self.bad_messages <= 20 or self.bad_messages % 1000 == 0:
                logger.warning(
                    "dropped a malformed message (%s); %d so far", exc, self.bad_messages
                )
            if identity:
                self._send(identity, P.ERROR, {"kind": "bad_message", "message": str(exc)[:500]})

    def _send(self, identity: bytes, tag: bytes, payload: dict[str, Any]) -> None:
        try:
            self.socket.send_multipart([identity, tag, P.encode(payload)], zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            logger.warning("could not send %r: %s", tag, exc)

    def _refuse(self, identity: bytes, kind: str, message: str) -> None:
        self.refused_requests += 1
        logger.warning("refused a request: %s", message)
        self._send(identity, P.ERROR, {"kind": kind, "message": message})

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
        worker_id = P.text(msg, "worker_id", max_len=64)
        token = P.text(msg, "token", max_len=64)
        known = self.workers.get(worker_id)
        if known is not None and not hmac.compare_digest(known.token, token):
            self._refuse(identity, "refused", f"worker id {worker_id} belongs to another worker")
            return
        worker = _Worker(
            worker_id=worker_id,
            token=token,
            identity=identity,
            hostname=P.text(msg, "hostname", ""),
            host=P.text(msg, "host"),
            pid=P.integer(msg, "pid", 0, 1 << 31, 0),
            address=P.text(msg, "address"),
            cpu_total=P.integer(msg, "cpu_num", 0, 1 << 16),
            gpus=P.items(msg, "gpus", str, 64),
            log_dir=P.text(msg, "log_dir", "", max_len=4096),
        )
        jobs = msg.get("jobs")
        if not isinstance(jobs, dict):
            raise P.BadMessage("field 'jobs' must be an object")
        if known is not None:
            worker.seq = known.seq  # a report older than one already applied stays ignored
        self.workers[worker_id] = worker
        self._apply_state(worker, jobs, P.integer(msg, "seq", 0, 1 << 62))
        logger.info(
            "worker %s%s: %d CPUs, GPUs %s, %d actors",
            worker_id,
            " registered again" if known else "",
            worker.cpu_total,
            worker.gpus,
            sum(1 for a in self.allocations.values() if a.worker_id == worker_id),
        )
        self._send(
            identity, P.ACK, {"registered": True, "master": self.address, "mode": self.mode.value}
        )
        self._serve_pending()

    @property
    def mode(self) -> Mode:
        return self.security.mode

    def _worker(self, identity: bytes, msg: dict[str, Any]) -> _Worker | None:
        """The worker that sent ``msg`` (its token checked), or None after telling the sender."""
        worker = self.workers.get(P.text(msg, "worker_id", max_len=64))
        if worker is None:
            self._send(identity, P.ERROR, {"kind": "unknown_worker", "message": "not registered"})
            return None
        if not hmac.compare_digest(worker.token, P.text(msg, "token", max_len=64)):
            self._refuse(
                identity, "refused", f"a message for worker {worker.worker_id} without its token"
            )
            return None
        worker.identity = identity
        worker.last_seen = time.monotonic()
        if worker.lost_logged:
            worker.lost_logged = False
            logger.info("worker %s reports again", worker.worker_id)
        return worker

    def _on_worker_heartbeat(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(identity, msg)
        if worker is None:
            return
        worker.bad_messages = P.integer(msg, "bad_messages", 0, 1 << 62, 0)
        worker.refused = P.integer(msg, "refused", 0, 1 << 62, 0)
        jobs = msg.get("jobs")
        if not isinstance(jobs, dict):
            raise P.BadMessage("field 'jobs' must be an object")
        self._apply_state(worker, jobs, P.integer(msg, "seq", 0, 1 << 62))
        self._send(identity, P.ACK, {})
        self._serve_pending()

    def _apply_state(self, worker: _Worker, jobs: dict[str, Any], seq: int) -> None:
        """Make the books agree with what ``worker`` says it runs (its newest report only).

        A job missing from the report exited; its client learns that from its own connection
        (or the worker's exit notice), so the books are fixed silently here.
        """
        ready = [self._job_info(j) for j in _objects(jobs, "ready")]
        busy = [self._job_info(j, claimed=True) for j in _objects(jobs, "busy")]
        if seq <= worker.seq:
            return
        worker.seq = seq
        live = {j["job_id"] for j in ready} | {j["job_id"] for j in busy}
        for allocation in list(self.allocations.values()):
            if allocation.worker_id == worker.worker_id and allocation.job_id not in live:
                self._job_gone(allocation.job_id, "released", "")
        for job in busy:
            self._claimed(worker, job)
        worker.ready = {
            j["job_id"]: j
            for j in ready
            if j["job_id"] not in self.allocations and j["job_id"] not in self.gone
        }

    @staticmethod
    def _job_info(job: dict[str, Any], claimed: bool = False) -> dict[str, Any]:
        info = {
            "job_id": P.text(job, "job_id", max_len=64),
            "address": P.text(job, "address"),
            "pid": P.integer(job, "pid", 1, 1 << 31),
            "mechanism": P.text(job, "mechanism", max_len=8),
            "max_message_bytes": P.integer(job, "max_message_bytes", 1, 1 << 62),
        }
        if claimed:
            info["client_id"] = P.text(job, "client_id", max_len=64)
            info["gpus"] = P.items(job, "gpus", str, 64)
        return info

    def _claimed(self, worker: _Worker, job: dict[str, Any]) -> None:
        """Record that a job hosts an actor (a claim message, or a worker's report)."""
        job_id = job["job_id"]
        worker.ready.pop(job_id, None)
        allocation = self.allocations.get(job_id)
        if allocation is not None:
            allocation.claimed = True
            return
        if job_id in self.gone:
            return
        gpus = list(job["gpus"])
        self.allocations[job_id] = _Allocation(
            job_id,
            worker.worker_id,
            job["client_id"],
            0 if gpus else 1,
            gpus,
            job["address"],
            job["pid"],
            claimed=True,
        )

    def _on_job_ready(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(identity, msg)
        if worker is None:
            return
        info = self._job_info(msg)
        if info["job_id"] not in self.allocations and info["job_id"] not in self.gone:
            worker.ready[info["job_id"]] = info
        self._serve_pending()

    def _on_job_claimed(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(identity, msg)
        if worker is None:
            return
        job_id = P.text(msg, "job_id", max_len=64)
        known = worker.ready.get(job_id) or {}
        allocation = self.allocations.get(job_id)
        if allocation is not None:
            allocation.claimed = True
            return
        if not known:
            return  # the next heartbeat carries the whole record
        job = {
            **known,
            "client_id": P.text(msg, "client_id", max_len=64),
            "gpus": P.items(msg, "gpus", str, 64),
        }
        self._claimed(worker, job)

    def _on_job_exited(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(identity, msg)
        if worker is None:
            return
        job_id = P.text(msg, "job_id", max_len=64)
        worker.ready.pop(job_id, None)
        reason = P.text(msg, "reason", "exited", max_len=32)
        self._job_gone(job_id, reason, P.text(msg, "message", "", max_len=4096))
        self._serve_pending()

    def _job_gone(self, job_id: str, reason: str, message: str) -> None:
        self.gone[job_id] = None
        while len(self.gone) > _MAX_GONE:
            self.gone.popitem(last=False)
        allocation = self.allocations.pop(job_id, None)
        if allocation is None or reason == "released":
            return
        client = self.clients.get(allocation.client_id)
        if client is not None:
            payload = {"job_id": job_id, "reason": reason, "message": message}
            self._send(client.identity, P.ACTOR_DIED, payload)

    # ------------------------------------------------------------------ clients
    def _on_hello(self, identity: bytes, msg: dict[str, Any]) -> None:
        error = self._version_error(msg)
        if error:
            self._send(identity, P.ERROR, {"kind": "version", "message": error})
            return
        client_id = P.text(msg, "client_id", max_len=64)
        again = client_id in self.clients
        self.clients[client_id] = _Client(
            client_id=client_id,
            identity=identity,
            hostname=P.text(msg, "hostname", ""),
            pid=P.integer(msg, "pid", 0, 1 << 31, 0),
            script=P.text(msg, "script", "", max_len=4096),
            actors=P.integer(msg, "actors", 0, 1 << 30, 0),
        )
        if not again:
            logger.info("client %s connected", client_id[:8])
        ack = {"master": self.address, "mode": self.mode.value, **P.identity()}
        self._send(identity, P.ACK, ack)

    def _client(self, identity: bytes, msg: dict[str, Any]) -> _Client | None:
        client = self.clients.get(P.text(msg, "client_id", max_len=64))
        if client is None:
            self._send(
                identity,
                P.ERROR,
                {
                    "kind": "unknown_client",
                    "request_id": msg.get("request_id"),
                    "message": "the client is not connected to this master",
                },
            )
            return None
        client.identity = identity
        client.last_seen = time.monotonic()
        return client

    def _on_client_heartbeat(self, identity: bytes, msg: dict[str, Any]) -> None:
        client = self._client(identity, msg)
        if client is None:
            return
        client.actors = P.integer(msg, "actors", 0, 1 << 30, 0)
        released = P.items(msg, "releases", str)
        for job_id in released:
            self._release(identity, client, job_id)
        self._send(identity, P.ACK, {"released": released})

    def _on_request_actor(self, identity: bytes, msg: dict[str, Any]) -> None:
        request_id = P.text(msg, "request_id", max_len=64)
        n_gpu = P.integer(msg, "n_gpu", 0, 64, 0)
        timeout = P.number(msg, "timeout", 0, 7 * 86400, self.timeouts.resource_timeout)
        client = self._client(identity, msg)
        if client is None:
            return
        most_gpus = max((len(w.gpus) for w in self.workers.values()), default=0)
        if n_gpu > most_gpus:
            message = (
                f"n_gpu={n_gpu} but no worker of the cluster at {self.address} has that many "
                f"GPUs (the most on one worker: {most_gpus}); start a worker with `xparl connect "
                "--address ... --gpu 0,1,...` or lower n_gpu"
            )
            payload = {"kind": "resource", "request_id": request_id, "message": message}
            self._send(identity, P.ERROR, payload)
            return
        deadline = time.monotonic() + timeout
        self.pending.append(_Pending(identity, client.client_id, request_id, n_gpu, deadline))
        self._serve_pending()

    def _on_release_actor(self, identity: bytes, msg: dict[str, Any]) -> None:
        client = self._client(identity, msg)
        if client is not None:
            self._release(identity, client, P.text(msg, "job_id", max_len=64))

    def _release(self, identity: bytes, client: _Client, job_id: str) -> None:
        allocation = self.allocations.get(job_id)
        if allocation is None:
            return
        if allocation.client_id != client.client_id:
            self._refuse(
                identity, "not_owner", f"client {client.client_id[:8]} may not release {job_id}"
            )
            return
        self._free(allocation, kill=True)

    def _free(self, allocation: _Allocation, kill: bool) -> None:
        self.allocations.pop(allocation.job_id, None)
        self.gone[allocation.job_id] = None
        worker = self.workers.get(allocation.worker_id)
        if kill and worker is not None:
            self._send(worker.identity, P.KILL_JOB, {"job_id": allocation.job_id})
        self._serve_pending()

    def _on_job_failed(self, identity: bytes, msg: dict[str, Any]) -> None:
        """A client could not reach or verify a job it was granted: recycle the job and hold
        the worker back until it reports again (it may be dead)."""
        client = self._client(identity, msg)
        if client is None:
            return
        job_id = P.text(msg, "job_id", max_len=64)
        allocation = self.allocations.get(job_id)
        if allocation is None or allocation.client_id != client.client_id:
            return
        logger.warning(
            "client %s could not use job %s (%s)",
            client.client_id[:8],
            job_id,
            P.text(msg, "message", "", max_len=1024),
        )
        worker = self.workers.get(allocation.worker_id)
        if worker is not None:
            worker.held_since = time.monotonic()
        self._free(allocation, kill=True)

    def _on_goodbye(self, identity: bytes, msg: dict[str, Any]) -> None:
        client = self._client(identity, msg)
        if client is None:
            return
        del self.clients[client.client_id]
        for allocation in list(self.allocations.values()):
            if allocation.client_id == client.client_id:
                self._free(allocation, kill=True)

    def _on_status(self, identity: bytes, msg: dict[str, Any]) -> None:
        self._send(identity, P.STATUS, self.status())

    def _on_ack(self, identity: bytes, msg: dict[str, Any]) -> None:
        """Acks need no answer."""

    _handlers: ClassVar[dict[bytes, Callable[[Master, bytes, dict[str, Any]], None]]] = {
        P.REGISTER_WORKER: _on_register_worker,
        P.WORKER_HEARTBEAT: _on_worker_heartbeat,
        P.JOB_READY: _on_job_ready,
        P.JOB_CLAIMED: _on_job_claimed,
        P.JOB_EXITED: _on_job_exited,
        P.HELLO: _on_hello,
        P.CLIENT_HEARTBEAT: _on_client_heartbeat,
        P.REQUEST_ACTOR: _on_request_actor,
        P.RELEASE_ACTOR: _on_release_actor,
        P.JOB_FAILED: _on_job_failed,
        P.GOODBYE: _on_goodbye,
        P.STATUS: _on_status,
        P.ACK: _on_ack,
    }

    # ------------------------------------------------------------------ scheduling
    def _usage(self, worker: _Worker) -> tuple[int, list[str]]:
        """CPUs and GPU ids of ``worker`` that actors hold."""
        cpus, gpus = 0, []
        for allocation in self.allocations.values():
            if allocation.worker_id == worker.worker_id:
                cpus += allocation.cpus
                gpus += allocation.gpus
        return cpus, gpus

    def _schedulable(self, worker: _Worker, now: float) -> bool:
        if now - worker.last_seen > self.fresh_s:
            return False
        held = worker.held_since
        return held is None or worker.last_seen - held > 2 * self.timeouts.heartbeat_interval

    def _pick(self, n_gpu: int) -> tuple[_Worker, list[str]] | None:
        now = time.monotonic()
        best: tuple[_Worker, list[str]] | None = None
        best_free = -1
        for worker in self.workers.values():
            if not worker.ready or not self._schedulable(worker, now):
                continue
            cpus_used, gpus_used = self._usage(worker)
            free_gpus = sorted(set(worker.gpus) - set(gpus_used), key=_gpu_sort_key)
            cpu_free = worker.cpu_total - cpus_used
            if (n_gpu and len(free_gpus) < n_gpu) or (not n_gpu and cpu_free < 1):
                continue
            if cpu_free > best_free:
                best, best_free = (worker, free_gpus[:n_gpu]), cpu_free
        return best

    def _serve_pending(self) -> None:
        still_waiting = []
        for request in self.pending:
            if request.client_id not in self.clients:
                continue
            picked = self._pick(request.n_gpu)
            if picked is None:
                still_waiting.append(request)
                continue
            worker, gpus = picked
            job_id, job = next(iter(worker.ready.items()))
            del worker.ready[job_id]
            self.allocations[job_id] = _Allocation(
                job_id,
                worker.worker_id,
                request.client_id,
                0 if request.n_gpu else 1,
                gpus,
                job["address"],
                job["pid"],
            )
            grant = {
                "request_id": request.request_id,
                **job,
                "gpus": gpus,
                "worker_id": worker.worker_id,
                "hostname": worker.hostname,
            }
            self._send(request.identity, P.REQUEST_ACTOR, grant)
        self.pending = still_waiting

    def _housekeeping(self) -> None:
        if self.owner_pid is not None and not process_exists(self.owner_pid):
            logger.warning("the process %d that owns this cluster exited; stopping", self.owner_pid)
            for worker in self.workers.values():
                self._send(worker.identity, P.SHUTDOWN, {})
            self.running = False
            return
        now = time.monotonic()
        if now - self.last_housekeeping > self.timeouts.heartbeat_timeout / 2:
            # This process was stalled (stopped, swapped out): give every peer a new window.
            logger.warning("this master was stalled for %.1f s", now - self.last_housekeeping)
            for worker in self.workers.values():
                worker.last_seen = now
            for client in self.clients.values():
                client.last_seen = now
        self.last_housekeeping = now
        self._check_workers(now)
        self._check_clients(now)
        self._expire_requests(now)

    def _check_workers(self, now: float) -> None:
        for worker in list(self.workers.values()):
            silent = now - worker.last_seen
            if silent > self.forget_s:
                logger.warning("forgetting worker %s (silent for %.0f s)", worker.worker_id, silent)
                del self.workers[worker.worker_id]
                for allocation in list(self.allocations.values()):
                    if allocation.worker_id == worker.worker_id:
                        self.allocations.pop(allocation.job_id)
            elif silent > self.timeouts.heartbeat_timeout and not worker.lost_logged:
                worker.lost_logged = True
                logger.warning(
                    "worker %s silent for %.1f s: left out of scheduling until it reports again "
                    "(its actors keep serving their clients)",
                    worker.worker_id,
                    silent,
                )

    def _check_clients(self, now: float) -> None:
        for client in list(self.clients.values()):
            silent = now - client.last_seen
            if silent <= self.timeouts.heartbeat_timeout:
                continue
            # Actors of a silent client end themselves when its connection ends; jobs it was
            # granted but never initialised would wait forever, so they go back now.
            for allocation in list(self.allocations.values()):
                if allocation.client_id == client.client_id and not allocation.claimed:
                    logger.warning(
                        "client %s lost; recycling job %s", client.client_id[:8], allocation.job_id
                    )
                    self._free(allocation, kill=True)
            if silent > self.forget_s:
                logger.warning(
                    "forgetting client %s (silent for %.0f s)", client.client_id[:8], silent
                )
                del self.clients[client.client_id]

    def _expire_requests(self, now: float) -> None:
        expired = [r for r in self.pending if r.deadline <= now]
        if not expired:
            return
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
        lost = (
            f" ({len(status['lost_workers'])} worker(s) not answering)"
            if status["lost_workers"]
            else ""
        )
        return (
            f"no worker of the cluster at {self.address} had {what} vacant within the resource "
            f"timeout: {status['cpus_used']} of {status['cpus_total']} CPUs and "
            f"{status['gpus_used']} of {status['gpus_total']} GPUs are in use by actors{lost}. "
            "Release actors you no longer need (`del actor`), add CPUs with `xparl connect "
            f"--address {self.address} --cpu_num N`, or raise the timeout "
            "(XPARL_RESOURCE_TIMEOUT or parl.connect(..., resource_timeout=...))."
        )

    def status(self) -> dict[str, Any]:
        """A JSON-able snapshot of workers, clients, actors and resources."""
        now = time.monotonic()
        workers: list[dict[str, Any]] = []
        lost: list[dict[str, Any]] = []
        for w in self.workers.values():
            used_cpus, used_gpus = self._usage(w)
            silent = now - w.last_seen
            entry = {
                "worker_id": w.worker_id,
                "hostname": w.hostname,
                "host": w.host,
                "pid": w.pid,
                "address": w.address,
                "cpus_total": w.cpu_total,
                "cpus_used": used_cpus,
                "gpus": w.gpus,
                "gpus_used": sorted(used_gpus, key=_gpu_sort_key),
                "idle_jobs": len(w.ready),
                "idle": [{"job_id": j, "address": info["address"]} for j, info in w.ready.items()],
                "log_dir": w.log_dir,
                "silent_s": round(silent, 1),
                "bad_messages": w.bad_messages,
                "refused_connections": w.refused,
            }
            (lost if silent > self.timeouts.heartbeat_timeout else workers).append(entry)
        clients = [
            {
                "client": c.client_id[:8],
                "hostname": c.hostname,
                "pid": c.pid,
                "script": c.script,
                "actors": c.actors,
                "connected_s": round(time.time() - c.connected_at, 1),
                "silent_s": round(now - c.last_seen, 1),
            }
            for c in self.clients.values()
        ]
        actors = [
            {
                "job_id": a.job_id,
                "worker_id": a.worker_id,
                "client": a.client_id[:8],
                "cpus": a.cpus,
                "gpus": a.gpus,
                "address": a.address,
                "pid": a.pid,
                "since": a.since,
            }
            for a in self.allocations.values()
        ]
        cpus_total = sum(w["cpus_total"] for w in workers)
        cpus_used = sum(w["cpus_used"] for w in workers)
        gpus_total = sum(len(w["gpus"]) for w in workers)
        gpus_used = sum(len(w["gpus_used"]) for w in workers)
        return {
            "address": self.address,
            "version": P.remote_version(),
            "python": P.python_version(),
            "security": self.mode.value,
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started_at, 1),
            "cpus_total": cpus_total,
            "cpus_used": cpus_used,
            "cpus_vacant": cpus_total - cpus_used,
            "gpus_total": gpus_total,
            "gpus_used": gpus_used,
            "gpus_vacant": gpus_total - gpus_used,
            "workers": workers,
            "lost_workers": lost,
            "clients": clients,
            "actors": actors,
            "pending_requests": len(self.pending),
            "bad_messages": self.bad_messages,
            "refused_connections": self.watch.refused,
            "refused_requests": self.refused_requests,
            "monitor_url": None,
        }


def _objects(msg: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return P.items(msg, key, dict, _MAX_JOBS)


def _gpu_sort_key(gpu: str) -> tuple[int, str]:
    return (int(gpu), gpu) if gpu.isdigit() else (1 << 30, gpu)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the master process; the cluster secret arrives on stdin's first line."""
    parser = argparse.ArgumentParser(prog="python -m parl.remote.master")
    parser.add_argument("--host", default=default_host())
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--advertise-host", default=None)
    parser.add_argument("--port-range", default=None)
    parser.add_argument("--ready-file", default=None)
    parser.add_argument("--owner-pid", type=int, default=None)
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.AUTH.value)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s master %(levelname)s %(message)s"
    )
    os.umask(0o077)
    secret = sys.stdin.readline().strip() or None
    try:
        security = Security.for_mode(Mode(args.mode), secret)
        master = Master(
            args.host, args.port, Timeouts(), security, args.port_range, args.advertise_host
        )
    except (ValueError, zmq.ZMQError) as exc:
        logger.error("%s", exc)
        if args.ready_file:
            write_atomic(args.ready_file, P.encode({"error": str(exc)}))
        sys.exit(2)
    master.owner_pid = args.owner_pid

    def stop(signum: int, frame: Any) -> None:
        master.running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.ready_file:
        write_atomic(
            args.ready_file,
            P.encode({"pid": os.getpid(), "port": master.port, "address": master.address}),
        )
    logger.info("master listening on %s (%s)", master.address, master.mode.value)
    master.serve()


if __name__ == "__main__":
    main()
