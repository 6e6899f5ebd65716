"""How often workers heartbeat: the master sets the pace so that its heartbeat work stays
bounded however many workers join.

Up to ``budget × interval`` workers (200 at the defaults: ``XPARL_HEARTBEATS_PER_S`` 400,
``XPARL_HEARTBEAT_INTERVAL`` 0.5 s) beat at the configured interval. Beyond, the master tells
each worker (in every answer) to beat every ``workers / budget`` seconds, so it reads about
``budget`` heartbeats a second at any size; a worker is taken for lost after
``max(heartbeat timeout, SILENT_BEATS × pace)`` of silence: 10 s at 1,000 workers, 50 s at
5,000 (PARL 2.x beat every 10 s and waited 30 s at any size). A heartbeat costs the master
about 100 µs of CPU all told (waking, libzmq's I/O thread, the answer), so 400 a second are
about 4 % of a core.
"""

from __future__ import annotations

__all__ = ["MAX_PACE_S", "SILENT_BEATS", "BeatPace", "lost_after"]

SILENT_BEATS = 4  # missed beats at the pace after which a worker counts as silent
MAX_PACE_S = 60.0  # no worker is told to beat less often than this


def lost_after(timeout: float, pace: float) -> float:
    """Seconds of silence after which a peer beating every ``pace`` seconds counts as lost."""
    return max(timeout, SILENT_BEATS * pace)


class BeatPace:
    """The heartbeat interval the master asks of its workers, and how long their silence may
    last before one counts as lost.

    When the pace quickens (workers left), those told the slower one may still beat once more
    at it: their silence is judged at the slower pace until they have had time to hear the new.
    """

    def __init__(self, interval: float, timeout: float, budget: float) -> None:
        if not budget > 0:
            raise ValueError(f"the heartbeat budget must be > 0 beats per second, got {budget}")
        self.interval = interval
        self.timeout = timeout
        self.budget = budget
        self.seconds = interval  # the pace told to workers now
        self.slower = interval  # a slower pace told before, still owed its grace ...
        self.slower_until = 0.0  # ... until then (monotonic seconds)

    def for_workers(self, workers: int) -> float:
        """The pace for a cluster of ``workers``, to the millisecond."""
        return round(min(MAX_PACE_S, max(self.interval, workers / self.budget)), 3)

    def update(self, workers: int, now: float) -> float:
        """Set :attr:`seconds` for ``workers`` workers (call when their number changes)."""
        pace = self.for_workers(workers)
        if pace < self.seconds:
            if now >= self.slower_until or self.seconds > self.slower:
                self.slower = self.seconds
            self.slower_until = now + 2 * self.slower
        self.seconds = pace
        return pace

    @property
    def paced(self) -> bool:
        """True when the workers are told to beat slower than configured (a large cluster)."""
        return self.seconds > self.interval

    def silence_limit(self, now: float) -> float:
        """Seconds of silence after which a worker counts as lost."""
        return lost_after(self.timeout, self._slowest(now))

    def fresh_s(self, now: float) -> float:
        """Seconds since a worker's last report within which it gets grants."""
        return max(3 * self._slowest(now), 1.5)

    def _slowest(self, now: float) -> float:
        """The slowest pace a worker may still be beating at."""
        return max(self.seconds, self.slower) if now < self.slower_until else self.seconds
