"""A stranger without the secret floods a worker and a master with idle TCP connections after
the test lowered their descriptor limit (so the flood exhausts it): both survive, and the
cluster's members are still served. Real processes on 127.0.0.1."""

from __future__ import annotations

import errno
import logging
import resource
import selectors
import socket
import threading
from collections.abc import Iterator

import parl
import parl.remote
from parl.remote import protocol as P
from parl.remote.cluster import LocalCluster, query
from parl.remote.security import Security, new_secret

import psutil
import pytest
import zmq

from .conftest import wait_for

HEADROOM = 40  # descriptors left to a process above what it holds when the flood starts
needs_prlimit = pytest.mark.skipif(
    not hasattr(resource, "prlimit"), reason="setting another process's fd limit needs Linux"
)


@parl.remote_class
class Echo:
    def echo(self, value: object) -> object:
        return value


class Flood:
    """Holds ``count`` idle connections to ``address`` (nothing is ever sent on them) and opens
    a new one for each the server closes, as a stranger keeping its descriptors taken would."""

    def __init__(self, address: str, count: int) -> None:
        host, port = address.rsplit(":", 1)
        self.target = (host, int(port))
        self.count = count
        self.selector = selectors.DefaultSelector()
        self.stop = threading.Event()
        self.reopened = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Flood:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()

    def _open(self) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        code = sock.connect_ex(self.target)
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            return
        self.selector.register(sock, selectors.EVENT_READ)

    def _run(self) -> None:
        while not self.stop.is_set():
            while len(self.selector.get_map()) < self.count:
                self._open()
            for key, _ in self.selector.select(0.05):
                sock = key.fileobj
                try:
                    closed = sock.recv(64) == b""  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                except OSError:
                    closed = True
                if closed:
                    self.selector.unregister(sock)
                    sock.close()  # type: ignore[union-attr]
                    self.reopened += 1


def lower_fd_limit(pid: int) -> int:
    """Set the soft and hard descriptor limits of ``pid`` to what it holds plus HEADROOM."""
    limit = psutil.Process(pid).num_fds() + HEADROOM
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
    return limit


def exhausted(pid: int, limit: int) -> bool:
    return bool(psutil.Process(pid).num_fds() >= limit - 2)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def answers(address: str, tag: bytes, cluster: LocalCluster) -> bool:
    """Whether a member dialing ``address`` now gets an answer to ``tag`` within 3 s."""
    try:
        return bool(query(address, tag, timeout=3, security=cluster.security))
    except ConnectionError:
        return False


@pytest.fixture
def cluster(start_cluster, monkeypatch) -> Iterator[LocalCluster]:  # type: ignore[no-untyped-def]
    # A flood saturates this machine (its thread runs in this very process): what is tested is
    # descriptors, not heartbeat timing, so peers get the default 4 s and more, not the suite's
    # 2.5 s, before they are taken for dead.
    monkeypatch.setenv("XPARL_HEARTBEAT_TIMEOUT", "8")
    cluster = start_cluster(2)
    cluster.wait_for_jobs(2, 30)
    yield cluster


@needs_prlimit
def test_a_flooded_worker_keeps_its_actors_and_serves_new_ones(cluster: LocalCluster) -> None:
    parl.remote.connect(cluster.address)
    before = Echo()
    assert before.echo(0) == 0
    worker = cluster.query()["workers"][0]
    limit = lower_fd_limit(worker["pid"])
    with Flood(worker["address"], 3 * limit) as flood:
        wait_for(lambda: exhausted(worker["pid"], limit), 30, "the worker's descriptors taken")
        during = Echo()  # claimed while the worker has no descriptor to spare
        assert during.echo(1) == 1 and before.echo(2) == 2
        # A member dialing the flooded worker (what `xparl status` does) is answered.
        wait_for(lambda: answers(worker["address"], P.INSPECT, cluster), 60, "an inspection")
        del during  # its job exits: the worker must start a new one, and cannot yet
        wait_for(lambda: flood.reopened >= limit, 30, "the flood to hold on past timeouts")
        assert alive(worker["pid"])
        assert before.echo(3) == 3
    assert alive(worker["pid"])
    wait_for(lambda: cluster.query()["cpus_vacant"] == 1, 30, "the released CPU back")
    cluster.wait_for_jobs(1, 30)  # the pool refilled once descriptors came free
    after = Echo()
    assert after.echo(4) == 4 and before.echo(5) == 5


@needs_prlimit
def test_a_flooded_master_still_answers_members(cluster: LocalCluster) -> None:
    master = cluster.master["pid"]
    limit = lower_fd_limit(master)
    with Flood(cluster.address, 3 * limit) as flood:
        wait_for(lambda: exhausted(master, limit), 30, "the master's descriptors taken")

        wait_for(
            lambda: answers(cluster.address, P.STATUS, cluster),
            60,
            "a status answer while the flood goes on",
        )
        parl.remote.connect(cluster.address)
        assert Echo().echo(1) == 1
        wait_for(lambda: flood.reopened >= limit, 30, "the flood to hold on past timeouts")
        assert alive(master)
    assert alive(master)
    assert cluster.query()["cpus_total"] == 2


@needs_prlimit
def test_a_flooded_job_keeps_serving_its_client(cluster: LocalCluster) -> None:
    """The client's connection is older than any stranger's, so the job's cap on pending
    handshakes never hangs up on it: calls go on through the flood."""
    parl.remote.connect(cluster.address)
    actor = Echo()
    assert actor.echo(0) == 0
    job = cluster.query()["actors"][0]
    limit = lower_fd_limit(job["pid"])
    with Flood(job["address"], 3 * limit) as flood:
        wait_for(lambda: exhausted(job["pid"], limit), 30, "the job's descriptors taken")
        calls = 0

        def serving() -> bool:
            nonlocal calls
            calls += 1
            assert actor.echo(calls) == calls
            return flood.reopened >= limit

        wait_for(serving, 60, "calls while the flood holds on past the cap")
    assert actor.echo("after") == "after" and alive(job["pid"])


def test_a_member_hung_up_on_once_is_not_told_it_was_refused() -> None:
    """A server that hangs up mid-handshake (a busy master's handshake timeout, a flooded one
    making room) is a refusal only when it happens DROPS_TO_REFUSAL times in a row: a CURVE
    server answers the wrong secret that way, every time."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    context = zmq.Context()
    address = f"127.0.0.1:{server.getsockname()[1]}"
    sock, watch = P.dial(context, address, Security(new_secret()), "refused", logging.getLogger())
    try:
        problems: list[str | None] = []

        def refusals() -> int:
            watch.drain()
            return watch.refused

        for drop in range(1, P.DROPS_TO_REFUSAL + 1):
            conn, _ = server.accept()  # the member dials (again); hang up at once
            conn.close()
            wait_for(lambda d=drop: refusals() >= d, 10, f"hang-up {drop} to be seen")
            problems.append(watch.problem)
        assert problems[:-1] == [None] * (P.DROPS_TO_REFUSAL - 1) and problems[-1] is not None
    finally:
        watch.close(sock)
        sock.close(linger=0)
        context.term()
        server.close()


def test_a_peer_is_idle_only_when_it_owes_the_next_handshake_step() -> None:
    """What tcp_info says about a pending connection decides its fate: silence after this
    side's signature (or whole greeting) is the peer's, silence before it is this side's own
    (a busy I/O thread) and never blamed on the peer."""
    from parl.remote.doorman import GRACE_S, _owes_us

    late = GRACE_S + 0.5
    assert _owes_us(received=0, acked=10, since_sent=late, grace=GRACE_S)  # sent nothing
    assert _owes_us(received=64, acked=64, since_sent=late, grace=GRACE_S)  # no HELLO
    assert not _owes_us(received=0, acked=10, since_sent=0.0, grace=GRACE_S)  # just sent
    assert not _owes_us(received=0, acked=0, since_sent=late, grace=GRACE_S)  # we said nothing
    assert not _owes_us(received=10, acked=11, since_sent=late, grace=GRACE_S)  # our greeting
    assert not _owes_us(received=64, acked=11, since_sent=late, grace=GRACE_S)  # ... not sent
