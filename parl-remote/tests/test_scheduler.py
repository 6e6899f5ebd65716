"""The master's scheduler and request queue against brute-force references: random sequences of
grants, releases, warm jobs coming and going, workers lost and found."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from parl.remote.pending import PendingRequests, Request
from parl.remote.scheduler import Scheduler, VacancyIndex

import pytest


@dataclass
class _RefWorker:
    cpu_total: int
    gpus: list[str]
    ready: list[str] = field(default_factory=list)
    usable: bool = True


class _Reference:
    """The old master's way: scan every worker, sum its allocations, take the most vacant."""

    def __init__(self) -> None:
        self.workers: dict[str, _RefWorker] = {}
        self.allocations: dict[str, tuple[str, int, list[str]]] = {}  # job -> worker, cpus, gpus

    def usage(self, worker_id: str) -> tuple[int, list[str]]:
        cpus, gpus = 0, []
        for owner, n, held in self.allocations.values():
            if owner == worker_id:
                cpus += n
                gpus += held
        return cpus, gpus

    def vacancy(self, worker_id: str, n_gpu: int) -> int:
        worker = self.workers[worker_id]
        if not worker.ready or not worker.usable:
            return 0
        cpus, gpus = self.usage(worker_id)
        return len(worker.gpus) - len(gpus) if n_gpu else worker.cpu_total - cpus

    def best(self, n_gpu: int) -> int:
        """The most vacancy any worker offers for a request of ``n_gpu`` (0: none fits)."""
        most = max((self.vacancy(w, n_gpu) for w in self.workers), default=0)
        return most if most >= max(n_gpu, 1) else 0


def _check_totals(books: Scheduler, ref: _Reference) -> None:
    assert books.cpus_total == sum(w.cpu_total for w in ref.workers.values())
    assert books.gpus_total == sum(len(w.gpus) for w in ref.workers.values())
    assert books.cpus_used == sum(n for _, n, _ in ref.allocations.values())
    assert books.gpus_used == sum(len(g) for _, _, g in ref.allocations.values())
    assert books.ready_jobs == sum(len(w.ready) for w in ref.workers.values())
    assert set(books.allocations) == set(ref.allocations)
    for worker_id, capacity in books.workers.items():
        cpus, gpus = ref.usage(worker_id)
        assert (capacity.cpus_used, sorted(capacity.gpus_used)) == (cpus, sorted(gpus))


@pytest.mark.parametrize("seed", range(8))
def test_grants_match_a_full_scan_under_random_events(seed: int) -> None:
    rng = random.Random(seed)
    books, ref = Scheduler(), _Reference()
    counter = 0

    def new_job(worker_id: str) -> None:
        nonlocal counter
        counter += 1
        job_id = f"{worker_id}-{counter:04d}"
        books.add_ready(worker_id, job_id, {"address": "127.0.0.1:1", "pid": counter})
        ref.workers[worker_id].ready.append(job_id)

    for step in range(3000):
        op = rng.random()
        if op < 0.08 or not ref.workers:  # a worker registers
            worker_id = f"w{step}"
            cpus = rng.randint(0, 8)
            gpus = [str(g) for g in range(rng.choice([0, 0, 0, 2, 4]))]
            books.add_worker(worker_id, cpus, gpus)
            ref.workers[worker_id] = _RefWorker(cpus, gpus)
            for _ in range(cpus + len(gpus)):
                new_job(worker_id)
        elif op < 0.12:  # a worker is lost for good
            worker_id = rng.choice(list(ref.workers))
            dropped = {a.job_id for a in books.remove_worker(worker_id)}
            assert dropped == {j for j, a in ref.allocations.items() if a[0] == worker_id}
            for job_id in dropped:
                del ref.allocations[job_id]
            del ref.workers[worker_id]
        elif op < 0.2:  # a worker goes silent, or reports again
            worker_id = rng.choice(list(ref.workers))
            usable = rng.random() < 0.5
            books.set_usable(worker_id, usable)
            ref.workers[worker_id].usable = usable
        elif op < 0.6:  # a grant
            n_gpu = rng.choice([0, 0, 0, 1, 2, 3])
            expected = ref.best(n_gpu)
            granted = books.grant(n_gpu, "c", f"r{step}", lambda capacity: True)
            if not expected:
                assert granted is None
                continue
            assert granted is not None
            allocation, _info = granted
            worker = ref.workers[allocation.worker_id]
            assert ref.vacancy(allocation.worker_id, n_gpu) == expected  # the most vacant
            assert worker.usable and allocation.job_id in worker.ready
            _, held = ref.usage(allocation.worker_id)
            assert len(allocation.gpus) == n_gpu and not set(allocation.gpus) & set(held)
            assert set(allocation.gpus) <= set(worker.gpus)
            worker.ready.remove(allocation.job_id)
            ref.allocations[allocation.job_id] = (
                allocation.worker_id,
                allocation.cpus,
                allocation.gpus,
            )
        elif op < 0.9 and ref.allocations:  # a release: the job exits, a new one warms up
            job_id = rng.choice(list(ref.allocations))
            worker_id = ref.allocations.pop(job_id)[0]
            assert books.free(job_id) is not None
            new_job(worker_id)
        else:  # a warm job exits on its own, or a new one comes
            worker_id = rng.choice(list(ref.workers))
            ready = ref.workers[worker_id].ready
            if ready and rng.random() < 0.5:
                job_id = ready.pop(rng.randrange(len(ready)))
                books.drop_ready(worker_id, job_id)
            else:
                new_job(worker_id)
        _check_totals(books, ref)


def test_an_unusable_worker_is_skipped_and_listed_again() -> None:
    books = Scheduler()
    books.add_worker("big", 8, [])
    books.add_worker("small", 2, [])
    for worker_id in ("big", "small"):
        books.add_ready(worker_id, f"{worker_id}-1", {})
    granted = books.grant(0, "c", "r1", lambda capacity: capacity.worker_id != "big")
    assert granted is not None and granted[0].worker_id == "small"
    assert books.grant(0, "c", "r2", lambda capacity: True) is None  # "big" stays unlisted
    books.set_usable("big", True)
    granted = books.grant(0, "c", "r3", lambda capacity: True)
    assert granted is not None and granted[0].worker_id == "big"


def test_the_vacancy_heap_stays_small_under_churn() -> None:
    index = VacancyIndex()
    rng = random.Random(0)
    for step in range(20_000):
        index.set(f"m{rng.randrange(50)}", rng.randrange(0, 9))
        assert len(index._heap) <= 2 * len(index) + 65
        best = index.best()
        expected = max(index._vacancy.values(), default=None)
        assert (best[1] if best else None) == expected, step


def _request(client: str, rid: str, n_gpu: int = 0, deadline: float = 10.0) -> Request:
    return Request(b"", client, rid, n_gpu, deadline)


def test_pending_requests_keep_order_bound_and_deadlines() -> None:
    pending = PendingRequests(per_client=3)
    assert all(pending.add(_request("a", f"a{i}", deadline=10 + i)) for i in range(3))
    assert not pending.add(_request("a", "a3"))  # over its client's bound
    assert pending.add(_request("b", "b0", n_gpu=1, deadline=5))
    assert [r.request_id for r in pending.heads()] == ["a0", "b0"]
    assert pending.cancel("a", "a0") is not None and pending.cancel("a", "a0") is None
    assert [r.request_id for r in pending.heads()] == ["a1", "b0"]
    assert [r.request_id for r in pending.expired(11.5)] == ["b0", "a1"]
    assert len(pending) == 1 and pending.waiting("a") == 1
    pending.drop_client("a")
    assert len(pending) == 0 and pending.heads() == []


def test_pending_requests_stay_small_under_add_and_cancel() -> None:
    pending = PendingRequests(per_client=10)
    pending.add(_request("a", "head", deadline=1e9))  # never served: the queue keeps growing
    for i in range(10_000):
        pending.add(_request("b", f"b{i}", deadline=1e9))
        pending.cancel("b", f"b{i}")
    assert len(pending) == 1
    assert len(pending._deadlines) <= 70 and sum(map(len, pending._queues.values())) <= 70


def test_the_lag_is_the_wait_beyond_each_workers_clock_offset(monkeypatch) -> None:
    """Heartbeats that waited 2 s read as a 2 s lag whatever the workers' clock offsets; one
    member with a wildly wrong clock does not move it; an idle window lets it fall again."""
    from parl.remote import lag as lag_module

    now = [1000.0]
    monkeypatch.setattr(lag_module.time, "time", lambda: now[0])
    monkeypatch.setattr(lag_module.time, "monotonic", lambda: now[0])
    lag = lag_module.HeartbeatLag()
    offsets = {f"w{i}": random.Random(i).uniform(-30, 30) for i in range(20)}
    for worker_id, offset in offsets.items():  # answered at once: the shortest delays
        lag.sample(worker_id, now[0] - 0.001 + offset)
    assert lag.update(now[0]) < 0.01
    now[0] += 1
    for worker_id, offset in offsets.items():  # each waited 2 s for the master
        lag.sample(worker_id, now[0] - 2.0 + offset)
    lag.sample("liar", now[0] + 1e5)  # a clock far ahead: its first delay is its baseline
    lag.sample("liar", now[0] - 1e5)
    assert 1.9 < lag.update(now[0]) < 2.6
    now[0] += lag_module.WINDOW_S
    lag.update(now[0])  # the window with the waits becomes the previous one
    now[0] += lag_module.WINDOW_S
    for worker_id, offset in offsets.items():
        lag.sample(worker_id, now[0] - 0.001 + offset)
    assert lag.update(now[0]) < 0.01
