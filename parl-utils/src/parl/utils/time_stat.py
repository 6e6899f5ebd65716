"""TimeStat: a context manager timing a block, with window statistics of the durations."""

from __future__ import annotations

import time
from types import TracebackType

from parl.utils.window_stat import WindowStat

__all__ = ["TimeStat"]


class TimeStat:
    """Time repeated blocks with ``with``; ``mean/min/max`` are over the last ``window_size``.

    Args:
        window_size: how many recent durations to keep.

    Examples:
        >>> learn_time = TimeStat(100)
        >>> with learn_time:
        ...     pass
        >>> learn_time.mean >= 0
        True
    """

    def __init__(self, window_size: int = 1) -> None:
        self._window = WindowStat(window_size)
        self._start: float | None = None

    def __enter__(self) -> TimeStat:
        self._start = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._start is not None, "__exit__ without __enter__"
        self._window.add(time.perf_counter() - self._start)
        self._start = None

    @property
    def mean(self) -> float | None:
        """Mean duration in seconds, or None before the first block ends."""
        return self._window.mean

    @property
    def min(self) -> float | None:
        """Shortest duration in seconds, or None before the first block ends."""
        return self._window.min

    @property
    def max(self) -> float | None:
        """Longest duration in seconds, or None before the first block ends."""
        return self._window.max
