"""``max_memory``: how much an actor's process may grow, checked the same way on every backend."""

from __future__ import annotations

__all__ = ["MemoryLimit", "rss_bytes"]


def rss_bytes() -> int:
    """The resident memory of this process, in bytes."""
    import psutil

    return int(psutil.Process().memory_info().rss)


class MemoryLimit:
    """The ``max_memory`` of one actor: its process may grow by ``limit_mb`` MB from now on.

    Args:
        limit_mb: MB of growth allowed over the resident memory measured at construction.
        who: Names the actor in the message (a job id, a Ray actor).
    """

    def __init__(self, limit_mb: float, who: str) -> None:
        self.limit_mb = limit_mb
        self.who = who
        self.baseline = rss_bytes()

    def exceeded(self) -> str | None:
        """The message to stop the actor with, once it grew past the limit; else None."""
        rss = rss_bytes()
        grown_mb = (rss - self.baseline) / 2**20
        if grown_mb <= self.limit_mb:
            return None
        return (
            f"actor {self.who} was killed: its memory grew by {grown_mb:.0f} MB "
            f"(RSS {rss / 2**20:.0f} MB), more than max_memory={self.limit_mb:g} MB. Raise "
            "max_memory in @parl.remote_class(max_memory=...) or make the actor use less memory."
        )
