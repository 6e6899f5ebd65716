"""A cluster under load and faults keeps every actor: a stalled master, a restarted master, a
killed worker, a stopped job, a slow call. Real processes on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import parl
import parl.remote
from parl.remote import ActorDiedError, CallTimeoutError, MasterLostError, ResourceError
from parl.remote import protocol as P
from parl.remote.cluster import LocalCluster, query

import psutil
import pytest

from .conftest import free_port, gone, stop_and_check, wait_for

BUSY_CLIENT = Path(__file__).with_name("busy_client.py")


def _calls(script) -> int:  # type: ignore[no-untyped-def]
    counts = script.saw("calls ")
    return int(counts[-1].split()[1]) if counts else 0


@pytest.mark.slow
def test_two_busy_clients_survive_a_stalled_master(start_cluster, scripts) -> None:
    """The issue's scenario, shortened for CI: two clients call their actors back to back and
    the master is stopped (SIGSTOP) for 6 s. No call fails, and the cluster is whole after."""
    cluster = start_cluster(2)
    worker = psutil.Process(cluster.workers[0]["pid"])
    clients = [scripts(BUSY_CLIENT, cluster.address) for _ in range(2)]
    for client in clients:
        wait_for(lambda c=client: c.saw("ready"), 30, "a client's actor")
    jobs = {a["job_id"]: a["pid"] for a in cluster.query()["actors"]}
    for client in clients:
        client.send("go")
    wait_for(lambda: all(_calls(c) >= 300 for c in clients), 30, "the clients to get going")
    master = cluster.master["pid"]
    os.kill(master, signal.SIGSTOP)
    stopped_at = time.monotonic()
    try:
        at_stop = [_calls(c) for c in clients]
        wait_for(
            lambda: (
                time.monotonic() - stopped_at >= 6
                and all(c.saw("lost") for c in clients)
                and all(_calls(c) >= n + 500 for c, n in zip(clients, at_stop, strict=True))
            ),
            30,
            "6 s of stall that the clients noticed while their calls went on",
        )
    finally:
        os.kill(master, signal.SIGCONT)
    at_resume = [_calls(c) for c in clients]
    wait_for(
        lambda: (
            all(c.saw("back") for c in clients)
            and all(_calls(c) >= n + 300 for c, n in zip(clients, at_resume, strict=True))
        ),
        30,
        "the clients to see the master again",
    )
    assert {a["job_id"]: a["pid"] for a in cluster.query()["actors"]} == jobs  # same actors
    reports = [json.loads(c.finish()) for c in clients]
    assert [r["errors"] for r in reports] == [0, 0], reports
    assert worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE
    wait_for(lambda: cluster.query()["cpus_vacant"] == 2, 10, "both CPUs back after the clients")
    status = cluster.query()
    assert [w["pid"] for w in status["workers"]] == [worker.pid] and status["lost_workers"] == []
    parl.remote.connect(cluster.address)
    assert _Echo().echo(5) == 5


@parl.remote_class
class _Echo:
    def echo(self, value: object) -> object:
        return value

    def pid(self) -> int:
        return os.getpid()

    def sleep(self, seconds: float) -> float:
        time.sleep(seconds)
        return seconds


@pytest.mark.slow
def test_restarted_master_gets_its_workers_and_actors_back(scripts) -> None:
    """A master killed and started again on the same port (same persisted secret): the worker
    registers again with its running actor, the client says hello again, nothing fails."""
    port = free_port()
    first = LocalCluster.start(2, port=port)
    second = None
    try:
        client = parl.remote.connect(first.address)
        actor = _Echo()
        job_pid = actor.pid()
        errors: list[BaseException] = []
        calls = [0]
        stop = threading.Event()

        def drive() -> None:
            while not stop.is_set():
                try:
                    actor.echo(calls[0])
                    calls[0] += 1
                except BaseException as exc:
                    errors.append(exc)
                    return

        thread = threading.Thread(target=drive, daemon=True)
        thread.start()
        os.kill(first.master["pid"], signal.SIGKILL)
        wait_for(lambda: client.master_lost, 10, "the client to notice the master is gone")
        with pytest.raises(MasterLostError, match="Existing actors keep working"):
            _Echo()
        before = calls[0]
        wait_for(lambda: calls[0] > before + 100, 10, "calls while the master is down")
        second = LocalCluster.start(0, port=port)
        assert second.security.secret == first.security.secret
        assert second.workers == first.workers  # kept in the record: `xparl stop` finds them

        def back() -> bool:
            status = second.query()
            return (
                [w["worker_id"] for w in status["workers"]] == [first.workers[0]["worker_id"]]
                and [a["pid"] for a in status["actors"]] == [job_pid]
                and len(status["clients"]) == 1
            )

        wait_for(back, 15, "the worker, its actor and the client back on the new master")
        wait_for(lambda: client.master_lost is None, 10, "the client to see the new master")
        other = _Echo()
        assert other.echo("new") == "new" and second.query()["cpus_used"] == 2
        stop.set()
        thread.join(10)
        assert errors == [] and calls[0] > before + 100
        assert actor.pid() == job_pid
    finally:
        parl.remote.disconnect()
        stop_and_check(second or first)
        first.stop()


def _orphaned(pid: int, parent: int) -> bool:
    try:
        return psutil.Process(pid).ppid() != parent
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
def test_a_real_worker_beats_at_the_pace_its_master_asks(start_cluster, monkeypatch) -> None:
    """A master that reads at most 0.25 heartbeats a second asks its one worker to beat every
    4 s (the tests' interval is 0.1 s, their heartbeat timeout 2.5 s): the worker's silences
    stretch to that pace, neither side takes the other for lost or redials, and an actor is
    created and called."""
    monkeypatch.setenv("XPARL_HEARTBEATS_PER_S", "0.25")
    cluster = start_cluster(1)
    cluster.wait_for_jobs(1, 20)

    def status() -> dict:
        answer = query(cluster.address, P.STATUS, {"limit": 10}, 10.0, cluster.security)
        assert answer["counts"]["lost_workers"] == 0, answer["counts"]
        return answer

    def silence() -> float:
        (worker,) = status()["workers"]
        return float(worker["silent_s"])

    assert status()["beat_every_s"] == 4.0
    # Every 4 s, not 0.1 s; and no redial (with a new registration) after 2.5 s of silence,
    # which would cut the silence short; then the next beat comes, well within 10 s.
    wait_for(lambda: silence() >= 3.0, 15, "a silence of 3 s between the worker's beats")
    wait_for(lambda: silence() < 1.0, 10, "the worker's next beat")
    parl.remote.connect(cluster.address)
    assert _Echo().echo(7) == 7


def test_a_killed_workers_cpus_are_not_handed_out(start_cluster) -> None:
    cluster = start_cluster(3)  # the victim: most vacant CPUs, so it is picked first
    survivor = cluster.add_worker(2)
    victim = cluster.workers[0]
    cluster.wait_for_jobs(5, 20)
    parl.remote.connect(cluster.address, resource_timeout=2)
    jobs = [child.pid for child in psutil.Process(victim["pid"]).children()]
    os.kill(victim["pid"], signal.SIGKILL)
    wait_for(lambda: gone([victim["pid"]]), 5, "the victim to die")
    # A job learns of its worker's death when the kernel gives it a new parent, which comes a
    # moment after the worker shows as a zombie (its other threads are still exiting).
    wait_for(lambda: all(_orphaned(job, victim["pid"]) for job in jobs), 5, "orphaned jobs")
    actors = [_Echo(), _Echo()]  # at once: the master still counts the victim as alive
    assert {a._xparl_channel.job_id[:8] for a in actors} == {survivor["worker_id"]}
    assert [a.echo(i) for i, a in enumerate(actors)] == [0, 1]
    wait_for(lambda: cluster.query()["lost_workers"], 10, "the master to leave the victim out")
    status = cluster.query()
    assert status["cpus_total"] == 2 and status["cpus_vacant"] == 0
    with pytest.raises(ResourceError, match="not answering"):
        _Echo()


def test_a_dead_workers_closed_connection_takes_it_off_the_books(start_cluster, monkeypatch):
    """At 5,000 workers the heartbeat pace is 12.5 s and a dead worker was granted jobs for up
    to 37.5 s. The master sees its connection close instead: with a heartbeat timeout of a
    minute here, nothing else could leave the victim out within the 20 s waited for."""
    monkeypatch.setenv("XPARL_HEARTBEAT_TIMEOUT", "60")
    cluster = start_cluster(2)
    survivor = cluster.add_worker(1)
    victim = cluster.workers[0]
    cluster.wait_for_jobs(3, 20)
    os.kill(victim["pid"], signal.SIGKILL)
    wait_for(lambda: gone([victim["pid"]]), 5, "the victim to die")
    wait_for(lambda: len(cluster.query()["lost_workers"]) == 1, 20, "the victim to be left out")
    status = cluster.query()
    assert status["cpus_total"] == 1 and [w["worker_id"] for w in status["workers"]] == [
        survivor["worker_id"]
    ]
    parl.remote.connect(cluster.address, resource_timeout=5)
    actor = _Echo()  # granted on the survivor, never on the dead worker
    assert actor._xparl_channel.job_id[:8] == survivor["worker_id"] and actor.echo(1) == 1


def test_a_stopped_actor_becomes_an_error_at_the_caller(connected, shared_cluster) -> None:
    actor = _Echo()
    pid = actor.pid()
    outcome: dict[str, object] = {}

    def call() -> None:
        try:
            actor.sleep(0.5)
            actor.sleep(60)
        except BaseException as exc:
            outcome["error"], outcome["at"] = exc, time.monotonic()

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    os.kill(pid, signal.SIGSTOP)
    stopped_at = time.monotonic()
    thread.join(20)
    assert isinstance(outcome.get("error"), ActorDiedError), outcome
    assert "stopped answering heartbeats" in str(outcome["error"])
    heartbeat_timeout = parl.remote.get_client().timeouts.heartbeat_timeout
    assert outcome["at"] - stopped_at < heartbeat_timeout + 5  # type: ignore[operator]
    wait_for(
        lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie",
        10,
        "the stopped job to be killed",
    )


def test_call_timeout_raises_and_the_actor_goes_on(connected) -> None:
    @parl.remote_class(call_timeout=1.0)
    class Slow:
        def sleep(self, seconds: float) -> float:
            time.sleep(seconds)
            return seconds

    actor = Slow()
    start = time.monotonic()
    with pytest.raises(CallTimeoutError, match="call_timeout"):
        actor.sleep(1.5)
    assert time.monotonic() - start < 1.5
    assert actor.sleep(0.01) == 0.01  # waits behind the slow call, gets its own answer
    with pytest.raises(ValueError, match="call_timeout=-1"):
        parl.remote_class(call_timeout=-1)


ENDLESS_CLIENT = """
import os, subprocess, sys, time
import parl

@parl.remote_class
class Endless:
    def spin(self) -> None:
        # A child in the job's process group, then a call that never returns.
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print("child", child.pid, flush=True)
        while True:
            time.sleep(0.05)

    def pid(self) -> int:
        return os.getpid()

parl.connect(sys.argv[1])
actor = Endless()
print("job", actor.pid(), flush=True)
actor.spin()
"""


def test_a_client_killed_during_an_endless_call_gets_its_cpu_back(start_cluster, scripts) -> None:
    """The job notices its client's death while the call still runs and ends the call's process
    group (the job and the process the call started); the master frees the CPU."""
    cluster = start_cluster(1)
    cluster.wait_for_jobs(1, 20)
    client = scripts(ENDLESS_CLIENT, cluster.address)
    wait_for(lambda: client.saw("job "), 30, "the client's actor")
    job = int(client.saw("job ")[0].split()[1])
    wait_for(lambda: cluster.query()["cpus_vacant"] == 0, 10, "the actor to hold the CPU")
    # The child prints to the job's log, not to the client: find it as the job's child.
    children = wait_for(psutil.Process(job).children, 20, "the call to start its child")
    child = children[0].pid  # type: ignore[index]
    client.kill()  # SIGKILL: no goodbye, no release
    bound = float(os.environ["XPARL_HEARTBEAT_TIMEOUT"]) + 5  # the bound, plus slack for load
    wait_for(lambda: gone([job, child]), bound, "the call's process group to end")
    wait_for(lambda: cluster.query()["cpus_vacant"] == 1, bound, "the CPU back in the pool")
    worker = cluster.query()["workers"][0]["address"]
    ended = query(worker, P.INSPECT, timeout=5, security=cluster.security)["ended"]
    assert [(a["pid"], a["reason"]) for a in ended] == [(job, "client_lost")], ended
