"""The xparl master: registers workers and clients, grants them warm jobs for actors, and
reports status. It never proxies a call: clients talk to their jobs directly.

The master keeps books, not actors. A worker registers with its whole state (warm jobs, jobs
hosting actors) and then reports each change as a numbered delta; its heartbeat carries only
the number of its latest change, and a master that missed one asks for the whole state again.
So a stalled master, a lost message or a restarted master costs no actor: workers register
again with what they run, clients say hello again, and scheduling goes on. A silent worker is
only left out of scheduling; its actors are judged by their own clients, which talk to them
directly.

Per message the work does not grow with the cluster: a grant takes the most vacant worker from
a heap (:mod:`parl.remote.scheduler`), waiting requests sit in bounded queues
(:mod:`parl.remote.pending`), silence is found by walking peers in the order they were last
heard from, and a status answer lists at most ``limit`` entries of each kind. The master
measures how old the heartbeats it reads are (its lag), logs when it falls behind, and shows it
in the status, so it never acts on stale state in silence.

Run as ``python -m parl.remote.master --port P`` with the cluster secret on stdin;
``xparl start`` and ``parl.connect()`` do that.
"""

from __future__ import annotations

import argparse
import contextlib
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
from parl.remote.config import Limits, Timeouts, default_host
from parl.remote.lag import HeartbeatLag
from parl.remote.pace import BeatPace
from parl.remote.pending import PendingRequests, Request
from parl.remote.processes import process_exists, raise_fd_limit
from parl.remote.scheduler import Allocation, Capacity, Scheduler, gpu_sort_key
from parl.remote.security import Mode, Security

import zmq

logger = logging.getLogger("parl.remote.master")

_MAX_GONE = 100_000  # ids of exited jobs remembered, so a late report cannot revive one
_MAX_JOBS = 4096  # jobs one worker may report
MAX_WORKERS = 20_000  # workers registered at once
MAX_CLIENTS = 10_000  # clients connected at once
MAX_PENDING_PER_CLIENT = 1024  # actor requests one client may have waiting
CLAIM_TIMEOUT_S = 60.0  # a grant not claimed within this is taken back (its client gave up)
STATUS_LIMIT = 1000  # entries of each list in a status answer, unless asked for fewer or more
MAX_STATUS_LIMIT = 20_000
_MAX_SCRIPT_CHARS = 512  # of a client's script path kept (its end): a hello's memory is bounded
_MORE, _LAST = int(zmq.NOBLOCK | zmq.SNDMORE), int(zmq.NOBLOCK)
_EVENTS, _POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)
_GATHER_S = 0.005
_PACED_GATHER_S = 0.05  # while workers beat at the master's pace and nothing else comes
_DUTIES_EVERY_S = 0.02  # housekeeping runs at most this often
_RESYNC_ACK = P.encode({"resync": True})


@dataclass
class _Worker:
    """What the master knows of a worker's connection; its capacity is in the scheduler."""

    worker_id: str
    token: str
    identity: bytes
    hostname: str
    host: str
    pid: int
    address: str
    log_dir: str
    last_seen: float = field(default_factory=time.monotonic)
    # When a client last could not reach one of its jobs: no grants until the worker has
    # reported for a while after that (a report queued before its death must not count).
    held_since: float | None = None
    lost_logged: bool = False
    change: int = -1  # the number of the newest change of its state applied
    link: int = 0  # the number of the worker's connection that ``identity`` belongs to
    resync_asked: float = 0.0
    bad_messages: int = 0
    refused: int = 0
    machine: dict[str, Any] | None = None  # memory, load and CPU count of its host


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
    lost_logged: bool = False


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
        self.watch = P.Watch(
            self.socket, zmq.EVENT_DISCONNECTED, "the master refused a connection", logger, True
        )
        # The connection (its descriptor) each routing identity last wrote on: a worker whose
        # connection closes is off the books at once, not after the heartbeat silence.
        self.identity_of_fd: dict[int, bytes] = {}
        self.address = f"{advertise_host or host}:{self.port}"
        self.workers: dict[str, _Worker] = {}
        self.worker_of_identity: dict[bytes, str] = {}
        self.clients: dict[str, _Client] = {}
        # Peers in the order they were last heard from: silence is found at the front.
        self.worker_silence: OrderedDict[str, None] = OrderedDict()
        self.client_silence: OrderedDict[str, None] = OrderedDict()
        self.scheduler = Scheduler()
        self.pending = PendingRequests(MAX_PENDING_PER_CLIENT)
        self.unclaimed: OrderedDict[str, None] = OrderedDict()  # granted jobs, oldest first
        self.grants: dict[tuple[str, str], str] = {}  # (client, request) -> unclaimed job
        self.gone: OrderedDict[str, None] = OrderedDict()
        self.lag = HeartbeatLag()
        self.behind = False  # logged as behind, not yet as caught up
        self.own_identity = P.identity()  # versions, host, pid: sent with every hello's answer
        self.status_answers: dict[int, tuple[float, bytes]] = {}  # limit -> (until, answer)
        self.started_at = time.time()
        self.running = True
        self.bad_messages = 0
        self.internal_errors = 0
        self.refused_requests = 0
        self.owner_pid: int | None = None
        self.last_housekeeping = time.monotonic()
        self.last_silence_check = 0.0
        self.pace = BeatPace(
            timeouts.heartbeat_interval, timeouts.heartbeat_timeout, Limits().heartbeats_per_s
        )
        self.forget_s = max(60.0, 10 * timeouts.heartbeat_timeout)

    @property
    def allocations(self) -> dict[str, Allocation]:
        return self.scheduler.allocations

    @property
    def mode(self) -> Mode:
        return self.security.mode

    # ------------------------------------------------------------------ main loop
    def serve(self) -> None:
        """Answer messages until SIGTERM/SIGINT."""
        poll_ms = max(20, int(self.timeouts.heartbeat_interval * 1000 / 2))
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        poller.register(self.watch.socket, zmq.POLLIN)
        last_duties = 0.0
        while self.running:
            events = dict(poller.poll(poll_ms))
            if self.socket in events:
                beats_only = True
                for _ in range(P.MAX_BURST):  # a flood cannot hold up housekeeping
                    if not int(self.socket.getsockopt(_EVENTS)) & _POLLIN:
                        break  # (asked, not tried: a failed receive costs an exception)
                    frames = self._note_connection(P.recv_bounded(self.socket, 3, copy=False))
                    beats_only = beats_only and _is_heartbeat(frames)
                    self._dispatch(frames)
                # Heartbeats arrive spread over time: waking for each would cost more than
                # answering it. A nap lets a few gather (their answers wait a few ms); longer
                # in a large cluster while only heartbeats come, short once other work does.
                paced = beats_only and self.pace.paced
                time.sleep(_PACED_GATHER_S if paced else _GATHER_S)
            if self.watch.socket in events:
                self._safely(self._drain_watch)
            now = time.monotonic()
            if now - last_duties >= _DUTIES_EVERY_S:  # not after every one of 10,000 messages/s
                last_duties = now
                self._safely(self._drain_watch)
                self._safely(self._housekeeping)
        self.watch.close(self.socket)
        self.socket.close(linger=200)
        if self.gatekeeper is not None:
            self.gatekeeper.stop()
        self.context.term()

    def _note_connection(self, frames: list[zmq.Frame] | None) -> list[bytes] | None:
        """The frames as bytes; remembers the connection the sender's identity came on."""
        if frames is None:
            return None
        with contextlib.suppress(zmq.ZMQError):
            self.identity_of_fd[frames[-1].get(zmq.SRCFD)] = frames[0].bytes
        return [frame.bytes for frame in frames]

    def _drain_watch(self) -> None:
        for event, fd in self.watch.drain():
            if event == zmq.EVENT_DISCONNECTED:
                self._connection_closed(fd)

    def _connection_closed(self, fd: int) -> None:
        """A worker whose connection closed (its process died, was killed, or its machine's
        network went) is left out of scheduling and counted lost now; it is back as soon as
        it reports again (a worker that only redialed does within a heartbeat)."""
        identity = self.identity_of_fd.pop(fd, None)
        if identity is None:
            return
        worker = self.workers.get(self.worker_of_identity.pop(identity, ""))
        if worker is None or worker.identity != identity:
            return
        now = time.monotonic()
        patience = self.pace.silence_limit(now) + self.lag.seconds
        worker.last_seen = min(worker.last_seen, now - patience - 0.001)
        self.worker_silence.move_to_end(worker.worker_id, last=False)
        if not worker.lost_logged:
            worker.lost_logged = True
            self.scheduler.set_usable(worker.worker_id, False)
            logger.warning(
                "worker %s's connection closed: left out of scheduling until it reports again",
                worker.worker_id,
            )

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
        except Exception:  # one message never ends the master: count it, log it, go on
            self._internal_error("a message")

    def _safely(self, duty: Callable[[], object]) -> None:
        """Run one of the loop's own duties; a failure is counted and logged, never fatal."""
        try:
            duty()
        except Exception:
            self._internal_error(duty.__name__.strip("_"))

    def _internal_error(self, what: str) -> None:
        self.internal_errors += 1
        if self.internal_errors <= 20 or self.internal_errors % 1000 == 0:
            logger.exception("%s failed (%d so far)", what, self.internal_errors)

    def _send(self, identity: bytes, tag: bytes, payload: dict[str, Any] | bytes) -> None:
        body = payload if isinstance(payload, bytes) else P.encode(payload)
        try:  # three sends with plain int flags: send_multipart's flag arithmetic costs more
            self.socket.send(identity, _MORE)
            self.socket.send(tag, _MORE)
            self.socket.send(body, _LAST)
        except zmq.ZMQError as exc:
            logger.warning("could not send %r: %s", tag, exc)

    def _refuse(self, identity: bytes, kind: str, message: str, **extra: Any) -> None:
        self.refused_requests += 1
        if self.refused_requests <= 20 or self.refused_requests % 1000 == 0:
            logger.warning("refused a request (%d so far): %s", self.refused_requests, message)
        self._send(identity, P.ERROR, {"kind": kind, "message": message, **extra})

    def _version_error(self, info: dict[str, Any]) -> str | None:
        mine = self.own_identity
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
        link = P.integer(msg, "link", 0, 1 << 62, 0)
        if known is not None and link < known.link:
            return  # sent on a connection the worker has replaced since (read after a stall)
        worker = _Worker(
            worker_id=worker_id,
            token=token,
            identity=identity,
            hostname=P.text(msg, "hostname", "", max_len=256),
            host=P.text(msg, "host", max_len=256),
            pid=P.integer(msg, "pid", 0, 1 << 31, 0),
            address=P.text(msg, "address", max_len=300),
            log_dir=P.text(msg, "log_dir", "", max_len=4096),
            link=link,
        )
        cpu_total = P.integer(msg, "cpu_num", 0, 1 << 16)
        gpus = P.items(msg, "gpus", str, 64)
        jobs = msg.get("jobs")
        if not isinstance(jobs, dict):
            raise P.BadMessage("field 'jobs' must be an object")
        change = P.integer(msg, "change", 0, 1 << 62)
        if known is None and len(self.workers) >= MAX_WORKERS:
            self._refuse(identity, "refused", f"the master already has {MAX_WORKERS} workers")
            return
        if known is not None:
            worker.change = known.change  # a report older than one already applied stays ignored
            worker.machine = known.machine
        self.workers[worker_id] = worker
        self.worker_of_identity[identity] = worker_id
        self.pace.update(len(self.workers), time.monotonic())
        self.worker_silence[worker_id] = None
        self.worker_silence.move_to_end(worker_id)
        self.scheduler.add_worker(worker_id, cpu_total, gpus)
        self._apply_state(worker, jobs, change)
        self._kill_ended_jobs(worker, jobs)
        logger.info(
            "worker %s%s: %d CPUs, GPUs %s, %d actors",
            worker_id,
            " registered again" if known else "",
            cpu_total,
            gpus,
            len(self.scheduler.workers[worker_id].jobs),
        )
        registered = {"master": self.address, "mode": self.mode.value, "every": self.pace.seconds}
        self._send(identity, P.ACK, {"registered": True, **registered})
        self._serve_pending()

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
        link = P.integer(msg, "link", 0, 1 << 62, 0)
        if link >= worker.link:  # not a message read late from a connection replaced since
            worker.identity, worker.link = identity, link
            self.worker_of_identity[identity] = worker.worker_id
        worker.last_seen = time.monotonic()
        self.worker_silence.move_to_end(worker.worker_id)
        if worker.lost_logged:
            worker.lost_logged = False
            logger.info("worker %s reports again", worker.worker_id)
        capacity = self.scheduler.workers[worker.worker_id]
        if not capacity.usable and self._usable(capacity):
            self.scheduler.set_usable(worker.worker_id, True)
        return worker

    def _in_step(self, worker: _Worker, msg: dict[str, Any]) -> bool:
        """True if ``msg`` is the worker's next change; a gap makes the master ask for its
        whole state, an old change is ignored."""
        change = P.integer(msg, "change", 0, 1 << 62)
        if change == worker.change + 1:
            worker.change = change
            return True
        if change > worker.change:
            self._ask_state(worker)
        return False

    def _ask_state(self, worker: _Worker) -> None:
        now = time.monotonic()
        if now - worker.resync_asked >= self.timeouts.heartbeat_interval:
            worker.resync_asked = now
            self._send(worker.identity, P.ACK, _RESYNC_ACK)

    def _on_worker_heartbeat(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(identity, msg)
        if worker is None:
            return
        sent = msg.get("sent")
        ack: dict[str, Any] = {"every": self.pace.seconds}  # how often to beat from now on
        if type(sent) is float and abs(time.time() - sent) < 86400:
            self.lag.sample(worker.worker_id, sent)
            ack["sent"] = sent  # echoed: the worker can time its master
        if "bad_messages" in msg:
            worker.bad_messages = P.integer(msg, "bad_messages", 0, 1 << 62)
            worker.refused = P.integer(msg, "refused", 0, 1 << 62, 0)
        if "machine" in msg:
            worker.machine = _machine(msg["machine"])
        change = P.integer(msg, "change", 0, 1 << 62)
        if "jobs" in msg:
            jobs = msg["jobs"]
            if not isinstance(jobs, dict):
                raise P.BadMessage("field 'jobs' must be an object")
            self._apply_state(worker, jobs, change)
            self._kill_ended_jobs(worker, jobs)
            self._serve_pending()
        elif change > worker.change:
            worker.resync_asked = time.monotonic()
            ack["resync"] = True  # a change never arrived: ask for the whole state
        self._send(identity, P.ACK, _ack_body(ack))

    def _apply_state(self, worker: _Worker, jobs: dict[str, Any], change: int) -> None:
        """Make the books agree with what ``worker`` says it runs (a newer report only).

        A job missing from the report exited; its client learns that from its own connection
        (or the worker's exit notice), so the books are fixed silently here.
        """
        if change <= worker.change:
            return  # not newer than what the books hold (a worker registering again, say)
        ready = [_job_info(j) for j in _objects(jobs, "ready")]
        busy = [_job_info(j, claimed=True) for j in _objects(jobs, "busy")]
        worker.change = change
        live = {j["job_id"] for j in ready} | {j["job_id"] for j in busy}
        for allocation in list(self.scheduler.of_worker(worker.worker_id)):
            if allocation.job_id not in live:
                self._job_gone(allocation.job_id, "released", "")
        for job in busy:
            self._claimed(worker, job)
        self.scheduler.set_ready(
            worker.worker_id,
            {
                j["job_id"]: j
                for j in ready
                if j["job_id"] not in self.allocations and j["job_id"] not in self.gone
            },
        )

    def _kill_ended_jobs(self, worker: _Worker, jobs: dict[str, Any]) -> None:
        """Order again the end of the jobs in a report of ``worker``'s whole state that the
        books ended: a kill order sent on a connection the worker had replaced was lost (a
        stalled master reads a give-up before the worker's new registration), and the job
        would stay warm on the worker, never granted, holding a CPU."""
        for kind in ("ready", "busy"):
            for job in _objects(jobs, kind):
                job_id = P.text(job, "job_id", max_len=64)
                if job_id in self.gone:
                    self._send(worker.identity, P.KILL_JOB, {"job_id": job_id})

    def _claimed(self, worker: _Worker, job: dict[str, Any]) -> None:
        """Record that a job hosts an actor (a claim, or a worker's report of its state)."""
        job_id = job["job_id"]
        if job_id in self.gone:
            return
        allocation = self.scheduler.hold(
            worker.worker_id, job_id, job["client_id"], job["gpus"], job
        )
        self._forget_grant(allocation)

    def _on_job_ready(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(identity, msg)
        if worker is None or not self._in_step(worker, msg):
            return
        info = _job_info(msg)
        if info["job_id"] not in self.gone:
            self.scheduler.add_ready(worker.worker_id, info["job_id"], info)
            self._serve_pending()

    def _on_job_claimed(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(identity, msg)
        if worker is None or not self._in_step(worker, msg):
            return
        self._claimed(worker, _job_info(msg, claimed=True))

    def _on_job_exited(self, identity: bytes, msg: dict[str, Any]) -> None:
        worker = self._worker(identity, msg)
        if worker is None or not self._in_step(worker, msg):
            return
        job_id = P.text(msg, "job_id", max_len=64)
        self.scheduler.drop_ready(worker.worker_id, job_id)
        reason = P.text(msg, "reason", "exited", max_len=32)
        self._job_gone(job_id, reason, P.text(msg, "message", "", max_len=4096))
        self._serve_pending()

    def _job_gone(self, job_id: str, reason: str, message: str) -> None:
        self._remember_gone(job_id)
        allocation = self.scheduler.free(job_id)
        if allocation is None:
            return
        self._forget_grant(allocation)
        client = self.clients.get(allocation.client_id)
        if client is not None and reason != "released":
            payload = {"job_id": job_id, "reason": reason, "message": message}
            self._send(client.identity, P.ACTOR_DIED, payload)

    def _remember_gone(self, job_id: str) -> None:
        self.gone[job_id] = None
        while len(self.gone) > _MAX_GONE:
            self.gone.popitem(last=False)

    # ------------------------------------------------------------------ clients
    def _on_hello(self, identity: bytes, msg: dict[str, Any]) -> None:
        error = self._version_error(msg)
        if error:
            self._send(identity, P.ERROR, {"kind": "version", "message": error})
            return
        client_id = P.text(msg, "client_id", max_len=64)
        known = self.clients.get(client_id)
        if known is None and len(self.clients) >= MAX_CLIENTS:
            self._refuse(
                identity,
                "refused",
                f"the master at {self.address} already serves {MAX_CLIENTS} clients; "
                "disconnect idle programs (parl.remote.disconnect()) and try again",
            )
            return
        script = P.text(msg, "script", "", max_len=4096)
        self.clients[client_id] = _Client(
            client_id=client_id,
            identity=identity,
            hostname=P.text(msg, "hostname", "", max_len=256),
            pid=P.integer(msg, "pid", 0, 1 << 31, 0),
            script=script[-_MAX_SCRIPT_CHARS:],
            actors=P.integer(msg, "actors", 0, 1 << 30, 0),
        )
        if known is not None:
            self.clients[client_id].connected_at = known.connected_at
        self.client_silence[client_id] = None
        self.client_silence.move_to_end(client_id)
        if known is None:
            logger.info("client %s connected", client_id[:8])
        ack = {"master": self.address, "mode": self.mode.value, **self.own_identity}
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
        client.lost_logged = False
        self.client_silence.move_to_end(client.client_id)
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
        key = (client.client_id, request_id)
        if self.pending.has(*key) or key in self.grants:
            return  # sent again after a hello: the first one is still served
        if n_gpu > self._most_gpus():
            message = (
                f"n_gpu={n_gpu} but no worker of the cluster at {self.address} has that many "
                f"GPUs (the most on one worker: {self._most_gpus()}); start a worker with "
                "`xparl connect --address ... --gpu 0,1,...` or lower n_gpu"
            )
            payload = {"kind": "resource", "request_id": request_id, "message": message}
            self._send(identity, P.ERROR, payload)
            return
        request = Request(identity, client.client_id, request_id, n_gpu, time.monotonic() + timeout)
        if not self.pending.add(request):
            self._refuse(
                identity,
                "busy",
                f"client {client.client_id[:8]} already has {MAX_PENDING_PER_CLIENT} actor "
                "requests waiting for a vacant CPU/GPU (the most one client may have); create "
                "fewer actors at once, or add CPUs to the cluster",
                request_id=request_id,
            )
            return
        self._serve_pending()

    def _most_gpus(self) -> int:
        if not self.scheduler.gpus_total:
            return 0
        return max(len(c.gpus) for c in self.scheduler.workers.values())

    def _on_cancel_request(self, identity: bytes, msg: dict[str, Any]) -> None:
        """A client gave up on a request: drop it, or take back the job it was granted."""
        client = self._client(identity, msg)
        if client is None:
            return
        request_id = P.text(msg, "request_id", max_len=64)
        if self.pending.cancel(client.client_id, request_id) is not None:
            return
        job_id = self.grants.get((client.client_id, request_id))
        allocation = self.allocations.get(job_id) if job_id else None
        if allocation is not None and not allocation.claimed:
            logger.info("client %s gave up on job %s; recycling it", client.client_id[:8], job_id)
            self._free(allocation, kill=True)

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

    def _free(self, allocation: Allocation, kill: bool) -> None:
        self.scheduler.free(allocation.job_id)
        self._forget_grant(allocation)
        self._remember_gone(allocation.job_id)
        worker = self.workers.get(allocation.worker_id)
        if kill and worker is not None:
            self._send(worker.identity, P.KILL_JOB, {"job_id": allocation.job_id})
        self._serve_pending()

    def _forget_grant(self, allocation: Allocation) -> None:
        """An allocation was claimed or ended: it no longer waits to be claimed."""
        if allocation.job_id in self.unclaimed:
            del self.unclaimed[allocation.job_id]
            self.grants.pop((allocation.client_id, allocation.request_id), None)

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
            self.scheduler.set_usable(worker.worker_id, False)
        self._free(allocation, kill=True)

    def _on_goodbye(self, identity: bytes, msg: dict[str, Any]) -> None:
        client = self._client(identity, msg)
        if client is None:
            return
        self._forget_client(client)
        for allocation in self.scheduler.of_client(client.client_id):
            self._free(allocation, kill=True)

    def _forget_client(self, client: _Client) -> None:
        del self.clients[client.client_id]
        self.client_silence.pop(client.client_id, None)
        self.pending.drop_client(client.client_id)

    def _on_status(self, identity: bytes, msg: dict[str, Any]) -> None:
        """Answer with the status; an answer is reused for four times what it cost to make
        (at most a second), so a flood of status requests takes at most a fifth of the
        master's time and heartbeats never wait long behind them."""
        limit = P.integer(msg, "limit", 0, MAX_STATUS_LIMIT, STATUS_LIMIT)
        now = time.monotonic()
        cached = self.status_answers.get(limit)
        if cached is None or now >= cached[0]:
            started = time.perf_counter()
            body = P.encode(self.status(limit))
            reuse_s = min(1.0, 4 * (time.perf_counter() - started))
            if len(self.status_answers) >= 4:
                self.status_answers.clear()
            cached = self.status_answers[limit] = (now + reuse_s, body)
        self._send(identity, P.STATUS, cached[1])

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
        P.CANCEL_REQUEST: _on_cancel_request,
        P.RELEASE_ACTOR: _on_release_actor,
        P.JOB_FAILED: _on_job_failed,
        P.GOODBYE: _on_goodbye,
        P.STATUS: _on_status,
        P.ACK: _on_ack,
    }

    # ------------------------------------------------------------------ scheduling
    def _usable(self, capacity: Capacity) -> bool:
        """A worker gets grants while it reports, and a while after a client failed to use it."""
        worker = self.workers[capacity.worker_id]
        now = time.monotonic()
        if now - worker.last_seen > self.pace.fresh_s(now):
            return False
        held = worker.held_since
        return held is None or worker.last_seen - held > 2 * self.pace.seconds

    def _serve_pending(self) -> None:
        """Grant the oldest waiting requests while jobs fit them."""
        while len(self.pending):
            served = False
            for request in self.pending.heads():
                granted = self.scheduler.grant(
                    request.n_gpu, request.client_id, request.request_id, self._usable
                )
                if granted is not None:
                    self.pending.granted(request)
                    self._grant(request, *granted)
                    served = True
            if not served:
                return

    def _grant(self, request: Request, allocation: Allocation, job: dict[str, Any]) -> None:
        self.unclaimed[allocation.job_id] = None
        self.grants[(request.client_id, request.request_id)] = allocation.job_id
        worker = self.workers[allocation.worker_id]
        grant = {
            "request_id": request.request_id,
            **job,
            "gpus": allocation.gpus,
            "worker_id": worker.worker_id,
            "hostname": worker.hostname,
        }
        self._send(request.identity, P.REQUEST_ACTOR, grant)

    # ------------------------------------------------------------------ housekeeping
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
        self._expire_requests(now)
        if now - self.last_silence_check >= self.timeouts.heartbeat_interval / 2:
            self.last_silence_check = now
            self._report_lag(now)
            self._check_workers(now)
            self._check_clients(now)
            self._expire_grants(now)

    def _report_lag(self, now: float) -> None:
        lag = self.lag.update(now)
        if lag > 2 * self.timeouts.heartbeat_interval and not self.behind:
            self.behind = True
            logger.warning(
                "this master is behind: heartbeats wait %.1f s before it reads them, so its "
                "view of the workers is that old (%d workers, %d clients, %d requests waiting)",
                lag,
                len(self.workers),
                len(self.clients),
                len(self.pending),
            )
        elif lag <= self.timeouts.heartbeat_interval and self.behind:
            self.behind = False
            logger.info("this master caught up (heartbeats read within %.2f s)", lag)

    def _check_workers(self, now: float) -> None:
        # A master that is behind reads old heartbeats: silence is judged net of its own lag.
        patience = self.pace.silence_limit(now) + self.lag.seconds
        for worker_id in _silent(self.worker_silence, self.workers, now - patience):
            worker = self.workers[worker_id]
            silent = now - worker.last_seen
            if silent > self.forget_s + self.lag.seconds:
                logger.warning("forgetting worker %s (silent for %.0f s)", worker_id, silent)
                del self.workers[worker_id]
                del self.worker_silence[worker_id]
                self.pace.update(len(self.workers), now)
                self.lag.forget(worker_id)
                for allocation in self.scheduler.remove_worker(worker_id):
                    self._forget_grant(allocation)
            elif not worker.lost_logged:
                worker.lost_logged = True
                self.scheduler.set_usable(worker_id, False)
                logger.warning(
                    "worker %s silent for %.1f s: left out of scheduling until it reports again "
                    "(its actors keep serving their clients)",
                    worker_id,
                    silent,
                )

    def _check_clients(self, now: float) -> None:
        patience = self.timeouts.heartbeat_timeout + self.lag.seconds
        for client_id in _silent(self.client_silence, self.clients, now - patience):
            client = self.clients[client_id]
            silent = now - client.last_seen
            if not client.lost_logged:
                client.lost_logged = True
                # Actors of a silent client end themselves when its connection ends; jobs it
                # was granted but never initialised would wait forever, so they go back now.
                for allocation in self.scheduler.of_client(client_id):
                    if not allocation.claimed:
                        logger.warning(
                            "client %s lost; recycling job %s", client_id[:8], allocation.job_id
                        )
                        self._free(allocation, kill=True)
            if silent > self.forget_s + self.lag.seconds:
                logger.warning("forgetting client %s (silent for %.0f s)", client_id[:8], silent)
                self._forget_client(client)

    def _expire_grants(self, now: float) -> None:
        """Take back jobs granted long ago and never claimed: their client gave up on them
        (its cancel was lost, or it stalled), and nothing else would ever free them."""
        while self.unclaimed:
            job_id = next(iter(self.unclaimed))
            allocation = self.allocations[job_id]
            if now - allocation.granted_at <= CLAIM_TIMEOUT_S + self.lag.seconds:
                return
            logger.warning(
                "job %s granted to client %s %.0f s ago was never claimed; recycling it",
                job_id,
                allocation.client_id[:8],
                now - allocation.granted_at,
            )
            self._free(allocation, kill=True)

    def _expire_requests(self, now: float) -> None:
        for request in self.pending.expired(now):
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
        books = self.scheduler
        what = f"{n_gpu} GPU(s)" if n_gpu else "a CPU"
        lost = sum(1 for w in self.workers.values() if w.lost_logged)
        lost_text = f" ({lost} worker(s) not answering)" if lost else ""
        return (
            f"no worker of the cluster at {self.address} had {what} vacant within the resource "
            f"timeout: {books.cpus_used} of {books.cpus_total} CPUs and {books.gpus_used} of "
            f"{books.gpus_total} GPUs are in use by actors{lost_text}. Release actors you no "
            "longer need (`del actor`), add CPUs with `xparl connect "
            f"--address {self.address} --cpu_num N`, or raise the timeout "
            "(XPARL_RESOURCE_TIMEOUT or parl.connect(..., resource_timeout=...))."
        )

    # ------------------------------------------------------------------ status
    def status(self, limit: int = STATUS_LIMIT) -> dict[str, Any]:
        """A JSON-able snapshot: totals of the whole cluster, and at most ``limit`` entries
        of each list (workers, lost workers, clients, actors); ``counts`` has their sizes."""
        now = time.monotonic()
        books = self.scheduler
        patience = self.pace.silence_limit(now) + self.lag.seconds
        lost_ids = _silent(self.worker_silence, self.workers, now - patience)
        lost_set = set(lost_ids)
        live_entries: list[dict[str, Any]] = []
        for worker_id, worker in self.workers.items():
            if len(live_entries) >= limit:
                break
            if worker_id not in lost_set:
                live_entries.append(self._worker_entry(worker, now))
        lost_entries = [self._worker_entry(self.workers[w], now) for w in lost_ids[:limit]]
        lost_capacity = [books.workers[w] for w in lost_ids]
        cpus_total = books.cpus_total - sum(c.cpu_total for c in lost_capacity)
        cpus_used = books.cpus_used - sum(c.cpus_used for c in lost_capacity)
        gpus_total = books.gpus_total - sum(len(c.gpus) for c in lost_capacity)
        gpus_used = books.gpus_used - sum(len(c.gpus_used) for c in lost_capacity)
        refused, hung_up = self.watch.tally(self.gatekeeper.denied if self.gatekeeper else 0)
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
            "idle_jobs": books.ready_jobs - sum(len(c.ready) for c in lost_capacity),
            "machines": self._machines(lost_set),
            "lag_s": round(self.lag.seconds, 3),
            "behind": self.behind,
            "beat_every_s": self.pace.seconds,
            "counts": {
                "workers": len(self.workers) - len(lost_ids),
                "lost_workers": len(lost_ids),
                "clients": len(self.clients),
                "actors": len(books.allocations),
            },
            "limit": limit,
            "workers": live_entries,
            "lost_workers": lost_entries,
            "clients": [self._client_entry(c, now) for c in _first(self.clients.values(), limit)],
            "actors": [_actor_entry(a) for a in _first(books.allocations.values(), limit)],
            "pending_requests": len(self.pending),
            "bad_messages": self.bad_messages,
            "internal_errors": self.internal_errors,
            "refused_connections": refused,
            "handshakes_hung_up": hung_up,
            "idle_connections_hung_up": self.watch.doorman.hung_up if self.watch.doorman else 0,
            "refused_requests": self.refused_requests,
            "monitor_url": None,
        }

    def _machines(self, lost: set[str]) -> dict[str, Any]:
        """Totals over the hosts of the answering workers (one machine counts once)."""
        hosts = {
            w.hostname: w.machine
            for w in self.workers.values()
            if w.machine is not None and w.worker_id not in lost
        }
        return {
            "hosts": len(hosts),
            "memory_total": sum(m["memory_total"] for m in hosts.values()),
            "memory_used": sum(m["memory_total"] - m["memory_available"] for m in hosts.values()),
            "load_1m": round(sum(m["load"][0] for m in hosts.values() if m["load"]), 2),
            "host_cpus": sum(m["cpu_count"] for m in hosts.values()),
        }

    def _worker_entry(self, worker: _Worker, now: float) -> dict[str, Any]:
        capacity = self.scheduler.workers[worker.worker_id]
        return {
            "worker_id": worker.worker_id,
            "hostname": worker.hostname,
            "host": worker.host,
            "pid": worker.pid,
            "address": worker.address,
            "cpus_total": capacity.cpu_total,
            "cpus_used": capacity.cpus_used,
            "gpus": capacity.gpus,
            "gpus_used": sorted(capacity.gpus_used, key=gpu_sort_key),
            "jobs": len(capacity.jobs),
            "idle_jobs": len(capacity.ready),
            "idle": [{"job_id": j, "address": i["address"]} for j, i in capacity.ready.items()],
            "log_dir": worker.log_dir,
            "silent_s": round(now - worker.last_seen, 1),
            "machine": worker.machine,
            "bad_messages": worker.bad_messages,
            "refused_connections": worker.refused,
        }

    @staticmethod
    def _client_entry(client: _Client, now: float) -> dict[str, Any]:
        return {
            "client": client.client_id[:8],
            "hostname": client.hostname,
            "pid": client.pid,
            "script": client.script,
            "actors": client.actors,
            "connected_s": round(time.time() - client.connected_at, 1),
            "silent_s": round(now - client.last_seen, 1),
        }


def _actor_entry(allocation: Allocation) -> dict[str, Any]:
    return {
        "job_id": allocation.job_id,
        "worker_id": allocation.worker_id,
        "client": allocation.client_id[:8],
        "cpus": allocation.cpus,
        "gpus": allocation.gpus,
        "address": allocation.address,
        "pid": allocation.pid,
        "class_name": allocation.class_name,
        "claimed": allocation.claimed,
        "since": allocation.since,
    }


def _silent(order: OrderedDict[str, None], peers: dict[str, Any], since: float) -> list[str]:
    """The peers last heard from before ``since``: the front of ``order`` (last heard from,
    oldest first), so the cost is the number of silent peers, not of all."""
    silent = []
    for peer_id in order:
        if peers[peer_id].last_seen >= since:
            break
        silent.append(peer_id)
    return silent


def _is_heartbeat(frames: list[bytes] | None) -> bool:
    return frames is not None and len(frames) == 3 and frames[1] == P.WORKER_HEARTBEAT


def _ack_body(ack: dict[str, Any]) -> bytes:
    """A heartbeat's answer; the common one (the pace, the send time echoed) without the JSON
    encoder, which costs more than the rest of a heartbeat."""
    if len(ack) == 2 and "sent" in ack:
        return b'{"every":%r,"sent":%r}' % (ack["every"], ack["sent"])
    return P.encode(ack)


def _first(values: Any, limit: int) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if len(out) >= limit:
            break
        out.append(value)
    return out


def _job_info(job: dict[str, Any], claimed: bool = False) -> dict[str, Any]:
    info = {
        "job_id": P.text(job, "job_id", max_len=64),
        "address": P.text(job, "address", max_len=300),
        "pid": P.integer(job, "pid", 1, 1 << 31),
        "mechanism": P.text(job, "mechanism", max_len=8),
        "max_message_bytes": P.integer(job, "max_message_bytes", 1, 1 << 62),
    }
    if claimed:
        info["client_id"] = P.text(job, "client_id", max_len=64)
        info["gpus"] = P.items(job, "gpus", str, 64)
        info["class_name"] = P.text(job, "class_name", "", max_len=256)
    return info


def _machine(value: Any) -> dict[str, Any]:
    """A worker's host facts (CPU count, load, memory), checked."""
    if not isinstance(value, dict):
        raise P.BadMessage("field 'machine' must be an object")
    load = P.items(value, "load", float, 3)
    return {
        "cpu_count": P.integer(value, "cpu_count", 1, 1 << 20),
        "load": [round(x, 2) for x in load],
        "memory_total": P.integer(value, "memory_total", 0, 1 << 60),
        "memory_available": P.integer(value, "memory_available", 0, 1 << 60),
    }


def _objects(msg: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return P.items(msg, key, dict, _MAX_JOBS)


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
    raise_fd_limit()
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
