"""WindowStat: mean, min and max over the last ``window_size`` values."""

from __future__ import annotations

from collections import deque

from parl.utils._validation import positive_int

__all__ = ["WindowStat"]


class WindowStat:
    """Statistics over a sliding window of the most recent values.

    Args:
        window_size: how many recent values to keep; an integer >= 1.

    Examples:
        >>> stat = WindowStat(2)
        >>> for x in (1.0, 2.0, 4.0):
        ...     stat.add(x)
        >>> stat.mean
        3.0
    """

    def __init__(self, window_size: int) -> None:
        self._items: deque[float] = deque(maxlen=positive_int("window_size", window_size))

    def add(self, obj: float) -> None:
        """Add a value, dropping the oldest one when the window is full."""
        self._items.append(float(obj))

    @property
    def count(self) -> int:
        """The number of values in the window."""
        return len(self._items)

    @property
    def mean(self) -> float | None:
        """The mean of the window, or None when empty."""
        return sum(self._items) / len(self._items) if self._items else None

    @property
    def min(self) -> float | None:
        """The smallest value in the window, or None when empty."""
        return min(self._items) if self._items else None

    @property
    def max(self) -> float | None:
        """The largest value in the window, or None when empty."""
        return max(self._items) if self._items else None
