"""The master's books of who holds what, and how it finds a vacant CPU or GPU.

A grant takes the worker with the most vacant CPUs (or GPUs) from a heap keyed by vacancy, so it
costs O(log n) in the number of workers, not a scan of the cluster; every count the status shows
(CPUs and GPUs used and total, warm jobs) is kept up to date as grants and releases happen, so a
status answer never walks the actors either.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Allocation", "Capacity", "Scheduler", "VacancyIndex", "gpu_sort_key"]


def gpu_sort_key(gpu: str) -> tuple[int, str]:
    """Order GPU ids numerically where they are numbers ("2" before "10")."""
    return (int(gpu), gpu) if gpu.isdigit() else (1 << 30, gpu)


class VacancyIndex:
    """Members keyed by a positive vacancy; the member with the most in O(log n) (amortised).

    A heap of ``(-vacancy, arrival, member)`` with lazy deletion: an entry whose vacancy is no
    longer the member's current one is dropped when it reaches the top. Among equal vacancies
    the member listed first comes first. The heap is rebuilt when stale entries outnumber live
    ones, so its size stays within a constant factor of the members.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str]] = []
        self._vacancy: dict[str, int] = {}
        self._arrival = itertools.count()

    def set(self, member: str, vacancy: int) -> None:
        """List ``member`` with ``vacancy`` (0 or less: unlist it)."""
        if vacancy <= 0:
            self.discard(member)
            return
        if self._vacancy.get(member) == vacancy:
            return
        self._vacancy[member] = vacancy
        heapq.heappush(self._heap, (-vacancy, next(self._arrival), member))
        self._compact()

    def discard(self, member: str) -> None:
        """Unlist ``member`` (nothing if it is not listed)."""
        if self._vacancy.pop(member, None) is not None:
            self._compact()

    def _compact(self) -> None:
        if len(self._heap) > 2 * len(self._vacancy) + 64:  # mostly stale entries: rebuild
            self._heap = [(-v, next(self._arrival), m) for m, v in self._vacancy.items()]
            heapq.heapify(self._heap)

    def best(self) -> tuple[str, int] | None:
        """The listed member with the most vacancy and that vacancy, or None."""
        heap = self._heap
        while heap:
            negative, _, member = heap[0]
            if self._vacancy.get(member) == -negative:
                return member, -negative
            heapq.heappop(heap)
        return None

    def __len__(self) -> int:
        return len(self._vacancy)

    def __contains__(self, member: object) -> bool:
        return member in self._vacancy


@dataclass
class Allocation:
    """A job granted to a client: claimed once the job reports that the client initialised it."""

    job_id: str
    worker_id: str
    client_id: str
    cpus: int
    gpus: list[str]
    address: str
    pid: int | None
    request_id: str = ""
    class_name: str = ""  # known once claimed
    claimed: bool = False
    since: float = field(default_factory=time.time)
    granted_at: float = field(default_factory=time.monotonic)


@dataclass
class Capacity:
    """What one worker offers and what of it is held: CPUs, GPUs and its warm jobs."""

    worker_id: str
    cpu_total: int
    gpus: list[str]
    ready: dict[str, dict[str, Any]] = field(default_factory=dict)
    cpus_used: int = 0
    gpus_used: set[str] = field(default_factory=set)
    jobs: set[str] = field(default_factory=set)  # ids of its allocations
    usable: bool = True  # the master hears from it and may grant its jobs

    @property
    def cpus_vacant(self) -> int:
        return self.cpu_total - self.cpus_used

    def free_gpus(self) -> list[str]:
        """GPU ids no actor holds, in numeric order."""
        return sorted((g for g in self.gpus if g not in self.gpus_used), key=gpu_sort_key)


class Scheduler:
    """Workers' capacities, the allocations of their jobs, and the indexes that grant jobs.

    Totals (``cpus_total``, ``cpus_used``, ``gpus_total``, ``gpus_used``, ``ready_jobs``) are
    over every known worker and kept as things change. ``usable`` says whether a worker may
    get grants: a grant that meets an unusable worker at the top unlists it, and it is listed
    again by :meth:`set_usable` (the master calls it when the worker reports again).
    """

    def __init__(self) -> None:
        self.workers: dict[str, Capacity] = {}
        self.allocations: dict[str, Allocation] = {}
        self.by_client: dict[str, set[str]] = {}
        self.cpus_total = self.cpus_used = 0
        self.gpus_total = self.gpus_used = 0
        self.ready_jobs = 0
        self._cpu_index = VacancyIndex()
        self._gpu_index = VacancyIndex()

    # ------------------------------------------------------------------ workers
    def add_worker(self, worker_id: str, cpu_total: int, gpus: list[str]) -> Capacity:
        """Add a worker, or update what a known one offers (its allocations stay)."""
        capacity = self.workers.get(worker_id)
        if capacity is None:
            capacity = self.workers[worker_id] = Capacity(worker_id, cpu_total, list(gpus))
        else:
            self.cpus_total -= capacity.cpu_total
            self.gpus_total -= len(capacity.gpus)
            capacity.cpu_total, capacity.gpus = cpu_total, list(gpus)
        self.cpus_total += cpu_total
        self.gpus_total += len(gpus)
        self._reindex(capacity)
        return capacity

    def remove_worker(self, worker_id: str) -> list[Allocation]:
        """Forget a worker; return the allocations it held (now gone too)."""
        capacity = self.workers.get(worker_id)
        if capacity is None:
            return []
        dropped = [self.free(job_id) for job_id in list(capacity.jobs)]
        self.set_ready(worker_id, {})
        del self.workers[worker_id]
        self.cpus_total -= capacity.cpu_total
        self.gpus_total -= len(capacity.gpus)
        self._cpu_index.discard(worker_id)
        self._gpu_index.discard(worker_id)
        return [a for a in dropped if a is not None]

    def set_usable(self, worker_id: str, usable: bool) -> None:
        """Let a worker get grants, or not."""
        capacity = self.workers.get(worker_id)
        if capacity is not None and capacity.usable != usable:
            capacity.usable = usable
            self._reindex(capacity)

    def add_ready(self, worker_id: str, job_id: str, info: dict[str, Any]) -> None:
        """A warm job of ``worker_id`` waits for an actor."""
        capacity = self.workers[worker_id]
        if job_id in self.allocations or job_id in capacity.ready:
            return
        capacity.ready[job_id] = info
        self.ready_jobs += 1
        if len(capacity.ready) == 1:
            self._reindex(capacity)

    def drop_ready(self, worker_id: str, job_id: str) -> None:
        """A warm job is warm no more (it exited, or hosts an actor)."""
        capacity = self.workers.get(worker_id)
        if capacity is not None and capacity.ready.pop(job_id, None) is not None:
            self.ready_jobs -= 1
            if not capacity.ready:
                self._reindex(capacity)

    def set_ready(self, worker_id: str, ready: dict[str, dict[str, Any]]) -> None:
        """Replace a worker's warm jobs (from a report of its whole state)."""
        capacity = self.workers[worker_id]
        self.ready_jobs += len(ready) - len(capacity.ready)
        capacity.ready = dict(ready)
        self._reindex(capacity)

    # ------------------------------------------------------------------ grants
    def grant(
        self,
        n_gpu: int,
        client_id: str,
        request_id: str,
        usable: Callable[[Capacity], bool],
    ) -> tuple[Allocation, dict[str, Any]] | None:
        """Take a warm job of the worker with the most vacant CPUs (``n_gpu`` 0) or GPUs.

        ``usable`` is asked about the worker found; one it turns down is unlisted and the next
        is tried. Returns the allocation and the job's info, or None when nothing fits.
        """
        index = self._gpu_index if n_gpu else self._cpu_index
        while (best := index.best()) is not None:
            capacity = self.workers[best[0]]
            if best[1] < max(n_gpu, 1):
                return None  # the most vacant worker has too few: so has every other one
            if not usable(capacity):
                self.set_usable(capacity.worker_id, False)
                continue
            job_id, info = next(iter(capacity.ready.items()))
            gpus = capacity.free_gpus()[:n_gpu]
            allocation = Allocation(
                job_id,
                capacity.worker_id,
                client_id,
                0 if n_gpu else 1,
                gpus,
                str(info.get("address", "")),
                info.get("pid"),
                request_id=request_id,
            )
            self.drop_ready(capacity.worker_id, job_id)
            self._hold(capacity, allocation)
            return allocation, info
        return None

    def hold(
        self, worker_id: str, job_id: str, client_id: str, gpus: list[str], info: dict[str, Any]
    ) -> Allocation:
        """Record a job that a worker reports as hosting an actor (claimed)."""
        allocation = self.allocations.get(job_id)
        if allocation is not None:
            allocation.claimed = True
            allocation.class_name = str(info.get("class_name", ""))
            return allocation
        capacity = self.workers[worker_id]
        self.drop_ready(worker_id, job_id)
        allocation = Allocation(
            job_id,
            worker_id,
            client_id,
            0 if gpus else 1,
            [g for g in gpus if g in capacity.gpus],
            str(info.get("address", "")),
            info.get("pid"),
            class_name=str(info.get("class_name", "")),
            claimed=True,
        )
        self._hold(capacity, allocation)
        return allocation

    def free(self, job_id: str) -> Allocation | None:
        """End an allocation; return it (None if there was none)."""
        allocation = self.allocations.pop(job_id, None)
        if allocation is None:
            return None
        jobs = self.by_client.get(allocation.client_id)
        if jobs is not None:
            jobs.discard(job_id)
            if not jobs:
                del self.by_client[allocation.client_id]
        capacity = self.workers.get(allocation.worker_id)
        if capacity is not None:
            capacity.jobs.discard(job_id)
            capacity.cpus_used -= allocation.cpus
            self.cpus_used -= allocation.cpus
            for gpu in allocation.gpus:
                if gpu in capacity.gpus_used:
                    capacity.gpus_used.discard(gpu)
                    self.gpus_used -= 1
            self._reindex(capacity)
        return allocation

    def of_client(self, client_id: str) -> list[Allocation]:
        """The allocations of one client."""
        return [self.allocations[j] for j in self.by_client.get(client_id, ())]

    def of_worker(self, worker_id: str) -> Iterator[Allocation]:
        """The allocations on one worker."""
        capacity = self.workers.get(worker_id)
        for job_id in list(capacity.jobs if capacity else ()):
            yield self.allocations[job_id]

    # ------------------------------------------------------------------ internals
    def _hold(self, capacity: Capacity, allocation: Allocation) -> None:
        self.allocations[allocation.job_id] = allocation
        self.by_client.setdefault(allocation.client_id, set()).add(allocation.job_id)
        capacity.jobs.add(allocation.job_id)
        capacity.cpus_used += allocation.cpus
        self.cpus_used += allocation.cpus
        for gpu in allocation.gpus:
            if gpu not in capacity.gpus_used:
                capacity.gpus_used.add(gpu)
                self.gpus_used += 1
        self._reindex(capacity)

    def _reindex(self, capacity: Capacity) -> None:
        listed = capacity.usable and bool(capacity.ready)
        self._cpu_index.set(capacity.worker_id, capacity.cpus_vacant if listed else 0)
        gpus_vacant = len(capacity.gpus) - len(capacity.gpus_used) if listed else 0
        self._gpu_index.set(capacity.worker_id, gpus_vacant)
