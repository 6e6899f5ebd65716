"""Value schedules stepped by the training loop: piecewise constant and linear decay."""

from __future__ import annotations

from collections.abc import Sequence

from parl.utils._validation import positive_int

__all__ = ["LinearDecayScheduler", "PiecewiseScheduler"]


class PiecewiseScheduler:
    """A piecewise-constant schedule.

    Args:
        scheduler_list: ``[(step, value), ...]`` with strictly increasing steps; the value of a
            pair holds from its step until the next pair's step. The first value holds from the
            start.

    Raises:
        ValueError: if the list is empty, a pair is malformed, or the steps do not increase.

    Examples:
        >>> lr = PiecewiseScheduler([(0, 1e-3), (100, 1e-4)])
        >>> lr.step(100)
        0.0001
    """

    def __init__(self, scheduler_list: Sequence[tuple[int, float]]) -> None:
        pairs = list(scheduler_list)
        if not pairs:
            raise ValueError("scheduler_list is empty; pass [(step, value), ...], e.g. [(0, 1e-3)]")
        for i, pair in enumerate(pairs):
            if len(pair) != 2:
                raise ValueError(f"scheduler_list[{i}] = {pair!r} is not a (step, value) pair")
        for i in range(len(pairs) - 1):
            if not pairs[i][0] < pairs[i + 1][0]:
                raise ValueError(
                    f"scheduler_list steps must increase strictly, but step {pairs[i][0]!r} "
                    f"(index {i}) is followed by {pairs[i + 1][0]!r}; sort the pairs by step "
                    "and remove duplicates"
                )
        self.scheduler_list = pairs
        self.cur_index = 0
        self.cur_step = 0
        self.cur_value = pairs[0][1]

    def step(self, step_num: int = 1) -> float:
        """Advance by ``step_num`` steps and return the value at the new step."""
        self.cur_step += positive_int("step_num", step_num)
        while (
            self.cur_index + 1 < len(self.scheduler_list)
            and self.cur_step >= self.scheduler_list[self.cur_index + 1][0]
        ):
            self.cur_index += 1
        self.cur_value = self.scheduler_list[self.cur_index][1]
        return self.cur_value


class LinearDecayScheduler:
    """Linear decay from ``start_value`` to 0 over ``max_steps`` steps, then 0.

    The value after ``max_steps`` steps is exactly ``0.0`` (PARL's schedule, which a PPO
    learning rate reaches on its last update).

    Args:
        start_value: the value at step 0.
        max_steps: the number of steps to reach 0; must be > 0.

    Raises:
        ValueError: if ``max_steps`` is not a positive integer.

    Examples:
        >>> lr = LinearDecayScheduler(1.0, max_steps=4)
        >>> lr.step()
        0.75
    """

    def __init__(self, start_value: float, max_steps: int) -> None:
        self.start_value = start_value
        self.max_steps = positive_int("max_steps", max_steps)
        self.cur_step = 0

    def step(self, step_num: int = 1) -> float:
        """Advance by ``step_num`` steps and return ``start_value * (1 - step / max_steps)``."""
        self.cur_step = min(self.cur_step + positive_int("step_num", step_num), self.max_steps)
        return self.start_value * (1.0 - self.cur_step / self.max_steps)
