"""Actor requests the master could not grant yet: first come, first served, each within its
client's bound and its own deadline.

Requests wait in one FIFO queue per number of GPUs asked for, so serving them looks only at the
head of each queue (a request the head's worker cannot take, the ones behind it cannot either);
deadlines sit in a heap. Adding, cancelling, serving and expiring a request each cost O(log n)
or O(1), whatever the number waiting.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass

__all__ = ["PendingRequests", "Request"]


@dataclass
class Request:
    """One ``request_actor`` waiting for a job."""

    identity: bytes
    client_id: str
    request_id: str
    n_gpu: int
    deadline: float
    done: bool = False  # granted, cancelled or expired: skipped where it still sits


class PendingRequests:
    """The waiting requests, at most ``per_client`` of them per client."""

    def __init__(self, per_client: int) -> None:
        self.per_client = per_client
        self._queues: dict[int, deque[Request]] = {}
        self._deadlines: list[tuple[float, int, Request]] = []
        self._order = itertools.count()
        self._by_client: dict[str, dict[str, Request]] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def waiting(self, client_id: str) -> int:
        """How many requests of one client wait."""
        return len(self._by_client.get(client_id, ()))

    def has(self, client_id: str, request_id: str) -> bool:
        return request_id in self._by_client.get(client_id, {})

    def add(self, request: Request) -> bool:
        """Queue ``request``; False if its client already has ``per_client`` waiting."""
        mine = self._by_client.setdefault(request.client_id, {})
        if len(mine) >= self.per_client:
            return False
        mine[request.request_id] = request
        self._queues.setdefault(request.n_gpu, deque()).append(request)
        heapq.heappush(self._deadlines, (request.deadline, next(self._order), request))
        self._count += 1
        return True

    def cancel(self, client_id: str, request_id: str) -> Request | None:
        """Take one request out; return it (None if it was not waiting)."""
        request = self._by_client.get(client_id, {}).get(request_id)
        if request is not None:
            self._finish(request)
        return request

    def drop_client(self, client_id: str) -> None:
        """Take out every request of a client."""
        for request in list(self._by_client.get(client_id, {}).values()):
            self._finish(request)

    def heads(self) -> list[Request]:
        """The oldest waiting request of each GPU count."""
        heads = []
        for n_gpu, queue in list(self._queues.items()):
            while queue and queue[0].done:
                queue.popleft()
            if queue:
                heads.append(queue[0])
            else:
                del self._queues[n_gpu]
        return heads

    def granted(self, request: Request) -> None:
        """The head ``request`` got a job."""
        self._finish(request)

    def expired(self, now: float) -> list[Request]:
        """Take out and return the requests whose deadline passed."""
        expired = []
        while self._deadlines and self._deadlines[0][0] <= now:
            request = heapq.heappop(self._deadlines)[2]
            if not request.done:
                self._finish(request)
                expired.append(request)
        return expired

    def _finish(self, request: Request) -> None:
        if request.done:
            return
        request.done = True
        self._count -= 1
        mine = self._by_client.get(request.client_id)
        if mine is not None:
            mine.pop(request.request_id, None)
            if not mine:
                del self._by_client[request.client_id]
        bound = 2 * self._count + 64  # finished requests still queued: drop them now and then
        if len(self._deadlines) > bound:
            self._deadlines = [d for d in self._deadlines if not d[2].done]
            heapq.heapify(self._deadlines)
        if sum(len(queue) for queue in self._queues.values()) > bound:
            for n_gpu, queue in self._queues.items():
                self._queues[n_gpu] = deque(r for r in queue if not r.done)
