"""The master's control plane under load: hundreds of simulated workers, a flood of requests
from one member, and a stall under busy clients (no CPU leaks to grants nobody claims)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import uuid
from typing import Any

import parl
from parl.remote import protocol as P
from parl.remote.client import Client
from parl.remote.cluster import LocalCluster, query
from parl.remote.config import Timeouts
from parl.remote.master import MAX_PENDING_PER_CLIENT
from parl.remote.simulation import run_workers, worker_ids

import pytest

from .conftest import raw_socket, wait_for

_WORKERS = 300


def _status(cluster: LocalCluster, limit: int = 0) -> dict:
    """The master's status with at most ``limit`` entries per list (totals and counts whole)."""
    return query(cluster.address, P.STATUS, {"limit": limit}, 10.0, cluster.security)


@pytest.mark.slow
def test_a_master_keeps_hundreds_of_simulated_workers_and_serves_a_grant(monkeypatch) -> None:
    """300 workers (their own connections, the real protocol) register; a master that reads
    at most 60 heartbeats a second tells them to beat every 5 s, and none is taken for lost
    over twice the heartbeat timeout; a grant is served, claimed and released."""
    monkeypatch.setenv("XPARL_HEARTBEAT_INTERVAL", "0.5")  # the default, not the tests' 0.1 s
    monkeypatch.setenv("XPARL_HEARTBEAT_TIMEOUT", "4")
    monkeypatch.setenv("XPARL_HEARTBEATS_PER_S", "60")  # 300 workers: a beat every 5 s
    cluster = LocalCluster.start(0, timeouts=Timeouts())
    spawn = multiprocessing.get_context("spawn")
    mine, theirs = spawn.Pipe()
    assert cluster.security.secret is not None
    simulator = spawn.Process(
        target=run_workers,
        args=(0, _WORKERS, 2, cluster.address, "127.0.0.1:9", cluster.security.secret, theirs),
    )
    simulator.start()
    client = None
    try:
        wait_for(lambda: _status(cluster)["counts"]["workers"] == _WORKERS, 120, "every worker")
        watched_until = time.monotonic() + 8
        while time.monotonic() < watched_until:
            status = _status(cluster)
            assert status["counts"]["lost_workers"] == 0, status["counts"]
            time.sleep(0.25)
        assert status["beat_every_s"] == 5.0
        assert status["cpus_total"] == 2 * _WORKERS and status["idle_jobs"] == 2 * _WORKERS
        client = Client(cluster.address, None, Timeouts(), cluster.security)
        grant = client.request(P.REQUEST_ACTOR, {"n_gpu": 0, "timeout": 10.0}, 20.0)
        assert grant["worker_id"] in worker_ids(0, _WORKERS)
        mine.send(("claim", grant["worker_id"], grant["job_id"], client.client_id))
        wait_for(
            lambda: (
                [(a["job_id"], a["claimed"]) for a in _status(cluster, 10)["actors"]]
                == [(grant["job_id"], True)]
            ),
            20,
            "the claim to reach the master",
        )
        client.notify(P.RELEASE_ACTOR, {"job_id": grant["job_id"]})
        wait_for(
            lambda: (lambda s: s["cpus_used"] == 0 and s["idle_jobs"] == 2 * _WORKERS)(
                _status(cluster)
            ),
            20,
            "the released job replaced by a warm one",
        )
        final = _status(cluster, 5)
        assert final["counts"]["lost_workers"] == 0 and len(final["workers"]) == 5
        assert final["lag_s"] >= 0 and final["internal_errors"] == 0
    finally:
        if client is not None:
            client.close()
        mine.send(("stop",))
        report = mine.recv() if mine.poll(30) else {}
        simulator.join(30)
        if simulator.is_alive():
            simulator.kill()
        cluster.stop()
    assert report["registered"] == _WORKERS and len(report["answers"]) > _WORKERS
    assert report["paces"] == [5.0]  # every worker beats as the master asked


def test_a_flood_of_requests_and_hellos_is_bounded(start_cluster) -> None:
    """One member's 3,000 actor requests: at most MAX_PENDING_PER_CLIENT wait, the rest are
    refused at once; its 300 hellos with long script paths are kept short; the status stays
    answerable, its lists cut to the asked limit."""
    cluster = start_cluster(0)  # no CPUs: every request waits
    sock = raw_socket(cluster.address, cluster.security)
    client_id = uuid.uuid4().hex
    hello = {**P.identity(), "client_id": client_id, "script": "/x" * 2048, "actors": 0}
    sock.send_multipart([P.HELLO, P.encode(hello)])
    assert sock.poll(10_000) and sock.recv_multipart()[0] == P.ACK
    sent = 3000
    for i in range(sent):
        request = {"client_id": client_id, "request_id": f"r{i}", "n_gpu": 0, "timeout": 600}
        sock.send_multipart([P.REQUEST_ACTOR, P.encode(request)])
    refused = 0
    deadline = time.monotonic() + 60
    while refused < sent - MAX_PENDING_PER_CLIENT and time.monotonic() < deadline:
        if sock.poll(100):
            tag, body = sock.recv_multipart()
            if tag == P.ERROR and P.decode(body).get("kind") == "busy":
                refused += 1
    assert refused == sent - MAX_PENDING_PER_CLIENT
    assert _status(cluster)["pending_requests"] == MAX_PENDING_PER_CLIENT
    for i in range(24):
        cancel = {"client_id": client_id, "request_id": f"r{i}"}
        sock.send_multipart([P.CANCEL_REQUEST, P.encode(cancel)])
    wait_for(
        lambda: _status(cluster)["pending_requests"] == MAX_PENDING_PER_CLIENT - 24,
        20,
        "the cancelled requests to leave the queue",
    )
    for _ in range(300):
        other = {**hello, "client_id": uuid.uuid4().hex}
        sock.send_multipart([P.HELLO, P.encode(other)])
    status = wait_for(
        lambda: (lambda s: s if s["counts"]["clients"] == 301 else None)(_status(cluster, 100)),
        30,
        "the hellos to arrive",
    )
    assert len(status["clients"]) == 100 and status["limit"] == 100
    assert all(len(c["script"]) <= 512 for c in status["clients"])
    assert status["refused_requests"] >= sent - MAX_PENDING_PER_CLIENT
    sock.close()


STALL_CLIENT = """
import select, sys, time
import parl

@parl.remote_class
class Probe:
    def ping(self):
        return 1

parl.connect(sys.argv[1], resource_timeout=30)
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0)[0]:
    try:
        probe = Probe()
        probe.ping()
        del probe
        print("created", flush=True)
    except Exception as exc:
        print("failed", type(exc).__name__, flush=True)
        time.sleep(0.1)
sys.stdin.readline()
print("idle", flush=True)
sys.stdin.readline()
"""


@pytest.mark.slow
def test_a_stalled_master_leaks_no_cpu_to_given_up_requests(start_cluster, scripts) -> None:
    """Three clients create actors back to back on three CPUs while the master is stopped for
    10 s: the requests they gave up on are cancelled (or their grants expire), so once the
    clients rest, a new creation gets a CPU within its 2 s resource timeout."""
    cluster = start_cluster(3)
    clients = [scripts(STALL_CLIENT, cluster.address) for _ in range(3)]
    for client in clients:
        try:
            wait_for(lambda c=client: c.saw("created"), 60, "a client creating actors")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; its output: {client.lines[-20:]}") from None
    master = cluster.master["pid"]
    os.kill(master, signal.SIGSTOP)
    try:
        time.sleep(10)
    finally:
        os.kill(master, signal.SIGCONT)
    after = [len(c.saw("created")) for c in clients]
    wait_for(
        lambda: all(len(c.saw("created")) > n for c, n in zip(clients, after, strict=True)),
        60,
        "every client creating actors again",
    )
    for client in clients:
        client.send("stop")
    for client in clients:
        wait_for(lambda c=client: c.saw("idle"), 30, "the clients to rest")
    # Released actors' jobs are replaced by new warm ones; a grant nobody claims keeps its job.
    cluster.wait_for_jobs(3, timeout=30)
    parl.remote.connect(cluster.address, resource_timeout=2)

    @parl.remote_class
    class Late:
        def answer(self) -> int:
            return 42

    assert Late().answer() == 42
    for client in clients:
        client.finish()


def _job(job_id: str) -> dict:
    """A warm job's facts as a worker reports them."""
    return {"job_id": job_id, "address": "127.0.0.1:9", "pid": 1, "mechanism": "plain",
            "max_message_bytes": 1 << 20}  # fmt: skip


def _registration(worker_id: str, cpus: int, ready: list[str], **more: Any) -> dict:
    """A worker's registration with its warm jobs ``ready``."""
    return {
        **P.identity(), "worker_id": worker_id, "token": "t" * 32, "host": "127.0.0.1",
        "address": "127.0.0.1:9", "cpu_num": cpus, "gpus": [], "log_dir": "",
        "jobs": {"ready": [_job(j) for j in ready], "busy": []}, "change": 0, **more,
    }  # fmt: skip


class _MasterInProcess:
    """A real master driven message by message from this process, with one member socket:
    what the master answers is read back, no timing involved."""

    def __init__(self) -> None:
        from parl.remote.master import Master
        from parl.remote.security import Security, new_secret

        self.security = Security(new_secret())
        self.master = Master("127.0.0.1", 0, Timeouts(), self.security)
        self.member = raw_socket(self.master.address, self.security)
        self.others: list[Any] = []

    def connection(self) -> Any:
        """One more member socket (a worker's new connection, a client)."""
        self.others.append(raw_socket(self.master.address, self.security))
        return self.others[-1]

    def send(self, tag: bytes, payload: dict, sock: Any = None) -> list[tuple[bytes, dict]]:
        """Send one message (on ``sock``, by default the member socket), let the master
        handle it, return what it answered on that socket."""
        sock = sock or self.member
        sock.send_multipart([tag, P.encode(payload)])
        assert self.master.socket.poll(10_000)
        self.master._dispatch(P.recv_bounded(self.master.socket, 3))
        return self.answers(sock)

    @staticmethod
    def answers(sock: Any) -> list[tuple[bytes, dict]]:
        """What the master sent to ``sock`` so far."""
        answers = []
        while sock.poll(200):
            tag, body = sock.recv_multipart()
            answers.append((tag, P.decode(body)))
        return answers

    def register(self, worker_id: str, cpus: int, jobs: int) -> None:
        registration = _registration(worker_id, cpus, [f"{worker_id}-{i}" for i in range(jobs)])
        assert self.send(P.REGISTER_WORKER, registration)[0][1]["registered"]

    def close(self) -> None:
        for sock in (self.member, *self.others):
            sock.close(linger=0)
        master = self.master
        master.watch.close(master.socket)
        master.socket.close(linger=0)
        if master.gatekeeper is not None:
            master.gatekeeper.stop()
        master.context.term()


def test_a_grant_never_claimed_is_taken_back(monkeypatch) -> None:
    """A client that got a job and went quiet about it (its cancel lost) does not keep the CPU:
    past the claim timeout the master takes the job back and grants the next request."""
    from parl.remote import master as master_module

    monkeypatch.setattr(master_module, "CLAIM_TIMEOUT_S", 0.2)
    books = _MasterInProcess()
    try:
        books.register("w1", cpus=1, jobs=2)
        hello = {**P.identity(), "client_id": "c1", "script": "x", "actors": 0}
        books.send(P.HELLO, hello)
        request = {"client_id": "c1", "request_id": "r1", "n_gpu": 0, "timeout": 60}
        assert books.send(P.REQUEST_ACTOR, request)[0][1]["job_id"] == "w1-0"
        assert books.send(P.REQUEST_ACTOR, {**request, "request_id": "r2"}) == []  # one CPU
        time.sleep(0.3)
        books.master._housekeeping()
        assert [a.request_id for a in books.master.allocations.values()] == ["r2"]
        assert "w1-0" in books.master.gone and len(books.master.pending) == 0
    finally:
        books.close()


def test_a_missed_change_makes_the_master_ask_for_the_whole_state() -> None:
    """Worker changes are numbered deltas: the next one applies, an old one is ignored, and a
    gap (seen in a change or a heartbeat) brings a request for the whole state, which then
    replaces the master's view."""
    books = _MasterInProcess()
    try:
        books.register("w1", cpus=2, jobs=2)
        me = {"worker_id": "w1", "token": "t" * 32}
        exited = {**me, "job_id": "w1-0", "reason": "exited", "message": "", "returncode": 1}
        assert books.send(P.JOB_EXITED, {**exited, "change": 1}) == []
        assert books.master.scheduler.ready_jobs == 1
        assert books.send(P.JOB_EXITED, {**exited, "change": 1}) == []  # old: ignored
        beat = books.send(P.WORKER_HEARTBEAT, {**me, "change": 1, "sent": time.time()})
        assert beat[0][0] == P.ACK and "resync" not in beat[0][1] and "sent" in beat[0][1]
        gap = books.send(P.WORKER_HEARTBEAT, {**me, "change": 3, "sent": time.time()})
        assert gap[0][1].get("resync") is True  # change 2 never arrived
        ready = [_job(f"w1-{i}") for i in (1, 2, 3)]
        state = {**me, "change": 3, "jobs": {"ready": ready, "busy": []}}
        assert "resync" not in books.send(P.WORKER_HEARTBEAT, state)[0][1]
        capacity = books.master.scheduler.workers["w1"]
        assert sorted(capacity.ready) == ["w1-1", "w1-2", "w1-3"]
        assert books.master.scheduler.ready_jobs == 3
        books.send(P.JOB_READY, {**me, **_job("w1-9"), "change": 2})
        assert "w1-9" not in capacity.ready  # older than the state it sent
    finally:
        books.close()


def test_a_kill_order_lost_with_a_replaced_connection_is_sent_again() -> None:
    """The message order of a stalled master: the worker redialled meanwhile, and the master
    reads a client's give-up before the worker's new registration, so its kill order goes to
    the replaced connection and is lost; the registration still lists the job as warm. The
    master orders the kill again on the new connection (else the job stays warm on the worker,
    never granted, holding a CPU), and a message read late from the old connection neither
    registers the worker there again nor takes the master's orders back there."""
    books = _MasterInProcess()
    try:
        books.register("w1", cpus=1, jobs=1)  # on the worker's first connection (link 0)
        old, new, client = books.member, books.connection(), books.connection()
        books.send(P.HELLO, {**P.identity(), "client_id": "c1", "script": "x"}, client)
        request = {"client_id": "c1", "request_id": "r1", "n_gpu": 0, "timeout": 60}
        assert books.send(P.REQUEST_ACTOR, request, client)[0][1]["job_id"] == "w1-0"
        assert books.send(P.CANCEL_REQUEST, request, client) == []
        assert books.answers(old) == [(P.KILL_JOB, {"job_id": "w1-0"})]  # lost in truth
        again = books.send(P.REGISTER_WORKER, _registration("w1", 1, ["w1-0"], link=1), new)
        assert (P.KILL_JOB, {"job_id": "w1-0"}) in again
        assert books.master.scheduler.ready_jobs == 0 and books.master.scheduler.cpus_used == 0
        assert books.send(P.REGISTER_WORKER, _registration("w1", 1, ["w1-0"]), old) == []
        me = {"worker_id": "w1", "token": "t" * 32}
        books.send(P.WORKER_HEARTBEAT, {**me, "link": 0, "change": 0, "sent": time.time()}, old)
        exited = {**me, "link": 1, "change": 1, "job_id": "w1-0", "reason": "released",
                  "message": "", "returncode": 0}  # fmt: skip
        assert books.send(P.JOB_EXITED, exited, new) == []
        books.send(P.JOB_READY, {**me, **_job("w1-1"), "link": 1, "change": 2}, new)
        request = {**request, "request_id": "r2"}
        assert books.send(P.REQUEST_ACTOR, request, client)[0][1]["job_id"] == "w1-1"
        assert books.send(P.CANCEL_REQUEST, request, client) == []
        assert books.answers(new) == [(P.KILL_JOB, {"job_id": "w1-1"})]
        assert books.answers(old) == []
    finally:
        books.close()


def test_a_worker_drops_late_messages_of_its_ended_jobs_quietly(tmp_path) -> None:
    """A job's message read after the worker saw the job end (a claim sent as it was killed)
    is no malformed message; one for a job this worker never started still is."""
    from parl.remote.config import Limits
    from parl.remote.security import Security, new_secret
    from parl.remote.worker import Worker

    worker = Worker(
        "127.0.0.1:9", 1, [], "127.0.0.1", tmp_path, Timeouts(), Security(new_secret()), Limits()
    )
    try:
        worker.counter = 3  # jobs 0001 to 0003 started and ended
        claim = {"client_id": "c1", "gpus": [], "class_name": "Probe"}
        for job_id in (f"{worker.worker_id}-0002", f"{worker.worker_id}-0003"):
            body = P.encode({"job_id": job_id, **claim})
            worker._handle([b"job", P.JOB_CLAIMED, body], worker._on_job_message)
        assert worker.bad_messages == 0
        for job_id in (f"{worker.worker_id}-0004", "0badc0de-0001"):
            body = P.encode({"job_id": job_id, **claim})
            worker._handle([b"job", P.JOB_CLAIMED, body], worker._on_job_message)
        assert worker.bad_messages == 2
    finally:
        worker.shutdown()
        os.umask(worker.user_umask)  # the worker made this process's files owner-only


def test_redials_of_a_silent_master_back_off_and_spread() -> None:
    """Workers of a master that fell behind must not redial in step: each redial waits twice
    as long as the one before (up to a minute), spread ±50 % so thousands of workers fan out."""
    timeouts = Timeouts(heartbeat_timeout=4.0)
    for attempt, base in ((1, 4.0), (2, 8.0), (3, 16.0), (5, 60.0), (40, 60.0)):
        delays = [timeouts.redial_after(attempt) for _ in range(200)]
        assert all(0.5 * base <= d <= 1.5 * base for d in delays), (attempt, min(delays))
        assert max(delays) - min(delays) > 0.5 * base  # spread, not one instant for all


def test_a_failing_duty_of_the_loop_never_ends_the_master() -> None:
    """A duty of the master's own loop that raises (housekeeping, the doorman's descriptor
    checks: EMFILE under a flood) is counted and logged; the loop goes on answering."""
    import threading

    books = _MasterInProcess()
    master = books.master

    def broken() -> None:
        raise OSError(24, "Too many open files")

    master._housekeeping = broken  # type: ignore[method-assign]
    loop = threading.Thread(target=master.serve, daemon=True)
    try:
        loop.start()
        wait_for(lambda: master.internal_errors >= 2, 10, "the loop to run its duties twice")
        books.member.send_multipart([P.STATUS, P.encode({"limit": 0})])
        assert books.member.poll(10_000), "the master stopped answering"
        tag, body = books.member.recv_multipart()
        assert tag == P.STATUS and P.decode(body)["internal_errors"] >= 2
        assert loop.is_alive()
    finally:
        master.running = False
        loop.join(10)
        books.member.close(linger=0)
