"""How far behind the master is: the age of the heartbeats it reads.

A heartbeat carries its worker's send time. Its delay (receipt minus send time) includes the
worker's clock offset and the transport's latency, both steady; the shortest delay seen from a
worker stands for them, so a heartbeat's delay minus that worker's shortest is how long it
waited for the master. The lag is the 90th percentile of these waits over the last one or two
windows: one slow heartbeat or one member's wrong clock does not move it. Samples are counted
in logarithmic buckets, O(1) per heartbeat.
"""

from __future__ import annotations

import bisect
import time

__all__ = ["HeartbeatLag"]

WINDOW_S = 5.0  # the lag is the larger of this window's percentile and the last one's
_BUCKETS = [0.001 * 1.25**i for i in range(64)]  # upper bounds: 1 ms to about 20 minutes
_PERCENTILE = 0.9


class HeartbeatLag:
    """The master's lag, in :attr:`seconds`, from the heartbeats it reads."""

    def __init__(self) -> None:
        self.shortest: dict[str, float] = {}  # worker id -> shortest delay seen
        self.counts = [0] * (len(_BUCKETS) + 1)
        self.previous = 0.0
        self.seconds = 0.0
        self.window_start = time.monotonic()

    def sample(self, worker_id: str, sent: float) -> None:
        """Count one heartbeat of ``worker_id`` sent at ``sent`` (its ``time.time()``)."""
        delay = time.time() - sent
        shortest = self.shortest.get(worker_id)
        if shortest is None or delay < shortest:
            shortest = self.shortest[worker_id] = delay
        self.counts[bisect.bisect_left(_BUCKETS, delay - shortest)] += 1

    def forget(self, worker_id: str) -> None:
        """A worker left: its clock offset is no longer needed."""
        self.shortest.pop(worker_id, None)

    def update(self, now: float) -> float:
        """Recompute and return :attr:`seconds`; start a new window when this one is over."""
        current = self._percentile()
        if now - self.window_start >= WINDOW_S:
            self.previous, self.window_start = current, now
            self.counts = [0] * len(self.counts)
        self.seconds = max(current, self.previous)
        return self.seconds

    def _percentile(self) -> float:
        total = sum(self.counts)
        seen = 0
        for bucket, count in enumerate(self.counts):
            seen += count
            if total and seen >= _PERCENTILE * total:
                return _BUCKETS[min(bucket, len(_BUCKETS) - 1)]
        return 0.0
