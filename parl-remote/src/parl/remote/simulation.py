"""Simulated xparl workers: each its own authenticated connection to a real master, speaking
the worker protocol (registration with warm jobs, heartbeats, numbered job changes, kill orders
answered by a job exit and a new warm job), without starting any job process.

They load a master as thousands of real workers would, on one machine:
``benchmarks/remote/simulate_cluster.py`` measures the control plane with them, and the tests
check a master with a few hundred. A grant is claimed with :meth:`SimulatedWorker.claim`, as a
job's INIT makes a real worker do; calls to actors are not simulated.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import secrets
import time
from multiprocessing.connection import Connection
from typing import Any

from parl.remote import protocol as P
from parl.remote.config import Timeouts
from parl.remote.pace import MAX_PACE_S
from parl.remote.processes import raise_fd_limit
from parl.remote.security import Security

import zmq

__all__ = ["SimulatedWorker", "run_workers", "worker_ids"]


class SimulatedWorker:
    """One worker's side of the protocol, without job processes."""

    def __init__(
        self,
        context: zmq.Context,
        security: Security,
        master: str,
        worker_id: str,
        cpus: int,
        address: str,
    ) -> None:
        self.worker_id = worker_id
        self.address = address  # where the overview asks about its actors
        self.token = secrets.token_hex(16)
        self.cpus = cpus
        self.security = security
        self.timeouts = Timeouts()
        self.every = self.timeouts.heartbeat_interval  # the pace the master asks for
        self.change = 0
        self.counter = 0
        self.ready: dict[str, dict[str, Any]] = {}
        self.busy: dict[str, dict[str, Any]] = {}
        self.beats = 0
        self.answers: list[tuple[float, float]] = []  # (sent at, seconds to the answer)
        self.registered_at: float | None = None
        self.registrations = 0
        self.next_registration = 0.0
        self.socket = context.socket(zmq.DEALER)
        self.socket.linger = 0
        P.bound_inbound(self.socket, P.CONTROL_MAX_BYTES)
        security.dial_control(self.socket)
        self.socket.connect(f"tcp://{master}")
        for _ in range(cpus):
            self._warm_job()

    def _warm_job(self) -> dict[str, Any]:
        self.counter += 1
        job_id = f"{self.worker_id}-{self.counter:04d}"
        self.ready[job_id] = {
            "job_id": job_id,
            "address": "127.0.0.1:9",  # never dialled: calls are not simulated
            "pid": os.getpid(),
            "mechanism": self.security.job_mechanism,
            "max_message_bytes": 1 << 30,
        }
        return self.ready[job_id]

    def _send(self, tag: bytes, payload: dict[str, Any]) -> None:
        body = {"worker_id": self.worker_id, "token": self.token, **payload}
        with contextlib.suppress(zmq.Again):
            self.socket.send_multipart([tag, P.encode(body)], zmq.NOBLOCK)

    def _report_change(self, tag: bytes, payload: dict[str, Any]) -> None:
        self.change += 1
        self._send(tag, {**payload, "change": self.change})

    def _state(self) -> dict[str, list[dict[str, Any]]]:
        return {"ready": list(self.ready.values()), "busy": list(self.busy.values())}

    def register(self) -> None:
        """Register (again: after a backoff, as a real worker redials a silent master)."""
        self.registrations += 1
        self.next_registration = time.monotonic() + self.timeouts.redial_after(self.registrations)
        self._send(
            P.REGISTER_WORKER,
            {
                **P.identity(),
                "host": "127.0.0.1",
                "address": self.address,
                "cpu_num": self.cpus,
                "gpus": [],
                "log_dir": "",
                "jobs": self._state(),
                "change": self.change,
            },
        )

    def beat(self, whole_state: bool = False) -> None:
        self.beats += 1
        beat: dict[str, Any] = {"change": self.change, "sent": time.time()}
        if whole_state:
            beat["jobs"] = self._state()
        self._send(P.WORKER_HEARTBEAT, beat)

    def claim(self, job_id: str, client_id: str) -> None:
        info = self.ready.pop(job_id, None)
        if info is None:
            return
        claim = {**info, "client_id": client_id, "gpus": []}
        self.busy[job_id] = claim
        self._report_change(P.JOB_CLAIMED, {**claim, "class_name": "Simulated"})

    def drain(self, now: float) -> None:
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) == 2:
                self._on_master(frames[0], P.decode(frames[1]), now)

    def _on_master(self, tag: bytes, payload: dict[str, Any], now: float) -> None:
        if tag == P.ACK:
            every = P.number(payload, "every", 0.0, MAX_PACE_S, self.every)
            self.every = max(self.timeouts.heartbeat_interval, every)
        if tag == P.ACK and payload.get("registered"):
            self.registered_at = now
        elif tag == P.ACK:
            sent = payload.get("sent")
            if isinstance(sent, float):  # the master echoes a heartbeat's send time
                self.answers.append((sent, time.time() - sent))
            if payload.get("resync"):
                self.beat(whole_state=True)
        elif tag == P.KILL_JOB:
            job_id = str(payload.get("job_id"))
            if job_id in self.busy or job_id in self.ready:
                self.busy.pop(job_id, None)
                self.ready.pop(job_id, None)
                exited = {"job_id": job_id, "returncode": 0, "reason": "released", "message": ""}
                self._report_change(P.JOB_EXITED, exited)
                self._report_change(P.JOB_READY, self._warm_job())
        elif tag == P.ERROR and payload.get("kind") == "unknown_worker":
            self.register()


def worker_ids(index: int, count: int) -> list[str]:
    """Ids of the ``count`` workers of simulator process ``index``: 8 hex digits, as real
    workers' ids, the first two naming the process (so a grant finds its process)."""
    return [f"{index:02x}{i:06x}" for i in range(count)]


def run_workers(
    index: int, count: int, cpus: int, master: str, inspect: str, secret: str, conn: Connection
) -> None:
    """Run ``count`` simulated workers with ``cpus`` CPUs each until told to stop.

    Commands arrive on ``conn``: ``("claim", worker_id, job_id, client_id)`` claims a granted
    job, ``("drop", n)`` closes the connections of ``n`` registered workers (as their
    processes' deaths would) and answers with their ids, ``("stop",)`` ends the run, which
    sends back ``registered`` (workers the master
    acknowledged), ``answers`` (each heartbeat's send time and seconds to its answer),
    ``unanswered`` and ``paces`` (the intervals the workers beat at, sorted). Heartbeats are
    spread evenly over the interval, each worker at the pace the master asks of it; a worker
    the master does not acknowledge registers again after a growing, jittered backoff, as a
    real one redials.
    """
    raise_fd_limit()
    timeouts = Timeouts()
    context = zmq.Context()
    context.max_sockets = count + 64
    security = Security(secret)
    sims = [
        SimulatedWorker(context, security, master, w, cpus, inspect)
        for w in worker_ids(index, count)
    ]
    by_id = {s.worker_id: s for s in sims}
    by_socket = {s.socket: s for s in sims}
    dropped: set[int] = set()  # indices of the workers whose connection was closed
    poller = zmq.Poller()
    for sim in sims:
        sim.register()
        poller.register(sim.socket, zmq.POLLIN)
    poller.register(conn.fileno(), zmq.POLLIN)
    start = time.monotonic()
    due = [(start + timeouts.heartbeat_interval * i / count, i) for i in range(count)]
    tick_ms = max(1, count // 500)  # polling every socket costs O(count): not too often
    running = True
    while running:
        wait_ms = max(tick_ms, int((due[0][0] - time.monotonic()) * 1000))
        events = dict(poller.poll(wait_ms))
        now = time.monotonic()
        for sock in events:
            if sock != conn.fileno():
                by_socket[sock].drain(now)
                continue
            while conn.poll():
                command = conn.recv()
                if command[0] == "claim":
                    by_id[command[1]].claim(command[2], command[3])
                elif command[0] == "drop":
                    conn.send(_drop(sims, command[1], poller, dropped))
                running = running and command[0] != "stop"
        while due[0][0] <= now:
            at, i = due[0]
            sim = sims[i]
            if i in dropped:
                heapq.heapreplace(due, (at + MAX_PACE_S, i))
            elif sim.registered_at is not None:
                sim.beat()
            elif now >= sim.next_registration:
                sim.register()
            heapq.heapreplace(due, (at + sim.every, i))
    answers = [a for s in sims for a in s.answers]
    conn.send(
        {
            "registered": sum(1 for s in sims if s.registered_at is not None),
            "answers": answers,
            "unanswered": sum(s.beats for s in sims) - len(answers),
            "paces": sorted({s.every for s in sims}),
        }
    )
    for i, sim in enumerate(sims):
        if i not in dropped:
            sim.socket.close(linger=0)
    context.term()


def _drop(sims: list[SimulatedWorker], n: int, poller: zmq.Poller, dropped: set[int]) -> list[str]:
    """Close the connections of ``n`` registered, not yet dropped workers; return their ids."""
    ids: list[str] = []
    for i, sim in enumerate(sims):
        if len(ids) == n:
            break
        if i in dropped or sim.registered_at is None:
            continue
        poller.unregister(sim.socket)
        sim.socket.close(linger=0)
        dropped.add(i)
        ids.append(sim.worker_id)
    return ids
