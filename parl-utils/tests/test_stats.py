from __future__ import annotations

import time

from parl.utils import TimeStat, WindowStat

import pytest


def test_window_stat() -> None:
    stat = WindowStat(3)
    assert (stat.mean, stat.min, stat.max) == (None, None, None)
    for x in (5.0, 1.0, 3.0, 2.0):
        stat.add(x)
    assert stat.count == 3
    assert (stat.mean, stat.min, stat.max) == (2.0, 1.0, 3.0)


@pytest.mark.parametrize("size", [0, -1, 1.5, True])
def test_window_stat_rejects_bad_size(size: object) -> None:
    with pytest.raises(ValueError, match="window_size must be an integer > 0"):
        WindowStat(size)  # type: ignore[arg-type]


def test_time_stat_records_durations(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = iter([10.0, 10.5, 20.0, 21.5, 30.0, 30.25])
    monkeypatch.setattr(time, "perf_counter", lambda: next(ticks))
    timer = TimeStat(window_size=2)
    assert timer.mean is None
    for _ in range(3):
        with timer:
            pass
    assert (timer.mean, timer.min, timer.max) == (0.875, 0.25, 1.5)


def test_time_stat_records_even_when_block_raises() -> None:
    timer = TimeStat()
    with pytest.raises(KeyError), timer:
        raise KeyError("x")
    assert timer.mean is not None and timer.mean >= 0.0
