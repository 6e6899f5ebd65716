from __future__ import annotations

from parl.utils import LinearDecayScheduler, PiecewiseScheduler

import pytest


def test_piecewise_values() -> None:
    scheduler = PiecewiseScheduler([(0, 1.0), (3, 0.5), (5, 0.1)])
    assert [scheduler.step() for _ in range(6)] == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]


def test_piecewise_big_step_crosses_several_segments() -> None:
    scheduler = PiecewiseScheduler([(0, 1.0), (3, 0.5), (5, 0.1)])
    assert scheduler.step(10) == 0.1


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([], "empty"),
        ([(0, 1.0), (5, 0.5), (5, 0.1)], "step 5 .index 1. is followed by 5"),
        ([(3, 1.0), (1, 0.5)], "increase strictly"),
        ([(0, 1.0, 2.0)], "not a .step, value. pair"),
    ],
)
def test_piecewise_rejects_bad_lists(pairs: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PiecewiseScheduler(pairs)


def test_linear_decay() -> None:
    scheduler = LinearDecayScheduler(1.0, max_steps=4)
    assert [scheduler.step() for _ in range(5)] == [0.75, 0.5, 0.25, 0.0, 0.0]
    assert LinearDecayScheduler(2.0, 10).step(5) == pytest.approx(1.0)


@pytest.mark.parametrize("max_steps", [0, -1, 2.5, True])
def test_linear_rejects_bad_max_steps(max_steps: object) -> None:
    with pytest.raises(ValueError, match="max_steps must be an integer > 0"):
        LinearDecayScheduler(1.0, max_steps)  # type: ignore[arg-type]


@pytest.mark.parametrize("step_num", [0, -2, 1.5])
def test_step_rejects_bad_step_num(step_num: object) -> None:
    with pytest.raises(ValueError, match="step_num must be an integer > 0"):
        LinearDecayScheduler(1.0, 10).step(step_num)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="step_num must be an integer > 0"):
        PiecewiseScheduler([(0, 1.0)]).step(step_num)  # type: ignore[arg-type]
