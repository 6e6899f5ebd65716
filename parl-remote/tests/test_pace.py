"""The heartbeat pace a master sets: the configured interval for a small cluster, slower in
proportion beyond the master's budget, and silence judged at the slowest pace still owed."""

from __future__ import annotations

from parl.remote.pace import MAX_PACE_S, SILENT_BEATS, BeatPace, lost_after

import pytest


def test_the_configured_interval_holds_until_the_budget_is_reached() -> None:
    pace = BeatPace(interval=0.5, timeout=4.0, budget=500)
    assert pace.for_workers(1) == pace.for_workers(250) == 0.5
    assert pace.for_workers(1000) == 2.0 and pace.for_workers(5000) == 10.0
    assert pace.for_workers(10**9) == MAX_PACE_S


def test_silence_is_judged_at_the_pace_and_never_below_the_timeout() -> None:
    pace = BeatPace(interval=0.5, timeout=4.0, budget=500)
    assert pace.update(100, now=0.0) == 0.5
    assert pace.silence_limit(0.0) == 4.0 and pace.fresh_s(0.0) == 1.5
    assert pace.update(2000, now=1.0) == 4.0
    assert pace.silence_limit(1.0) == SILENT_BEATS * 4.0 and pace.fresh_s(1.0) == 12.0
    assert lost_after(4.0, 0.5) == 4.0 and lost_after(4.0, 3.0) == SILENT_BEATS * 3.0


def test_a_quicker_pace_keeps_the_slower_ones_grace_until_workers_heard_it() -> None:
    """Workers told to beat every 8 s may beat once more at that pace after the cluster
    shrank: they are not taken for lost at the new pace until they had time to hear it."""
    pace = BeatPace(interval=0.5, timeout=4.0, budget=500)
    pace.update(4000, now=0.0)  # 8 s
    pace.update(1000, now=10.0)  # 2 s, told from now on
    assert pace.silence_limit(10.0) == SILENT_BEATS * 8.0
    pace.update(100, now=12.0)  # 0.5 s: the 8 s pace is still owed its grace
    assert pace.silence_limit(20.0) == SILENT_BEATS * 8.0
    assert pace.silence_limit(40.0) == 4.0  # grace over: the quick pace's limit


def test_a_budget_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="budget"):
        BeatPace(interval=0.5, timeout=4.0, budget=0)
