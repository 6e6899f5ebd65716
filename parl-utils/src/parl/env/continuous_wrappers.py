"""Continuous-control wrappers: PARL 2.x's ``ActionMappingWrapper`` on gymnasium."""

from __future__ import annotations

from typing import Any

from parl.env.compat_wrappers import OldGymAttributes

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

__all__ = ["ActionMappingWrapper"]


class ActionMappingWrapper(OldGymAttributes, gym.ActionWrapper):
    """Let the agent act in ``[-1, 1]`` and map each dimension linearly onto the Box bounds.

    ``a_env = low + (a + 1) / 2 * (high - low)``, per dimension (PARL used the bounds of
    dimension 0 for all), then clipped to ``[low, high]``. The wrapper's ``action_space`` is
    ``Box(-1, 1)`` of the same shape.

    It may wrap a gymnasium env or, as PARL's DDPG/TD3/SAC examples do, a
    :class:`~parl.env.CompatWrapper`: ``seed()``, ``_max_episode_steps`` and the wrapped
    chain's other attributes stay reachable (:class:`~parl.env.compat_wrappers.OldGymAttributes`).

    Args:
        env: a gymnasium env with a bounded ``Box`` action space.

    Raises:
        TypeError: if the action space is not a ``Box``.
        ValueError: if a bound is infinite.
    """

    TOLERANCE = 1e-3
    """How far outside [-1, 1] an action may lie (rounding) before it is an error."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.action_space
        if not isinstance(space, gym.spaces.Box):
            raise TypeError(
                f"ActionMappingWrapper needs a Box action space, got {space!r}; it maps "
                "continuous actions only"
            )
        if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
            raise ValueError(
                f"ActionMappingWrapper needs finite bounds, got low={space.low}, "
                f"high={space.high}; clip the action space first"
            )
        self._low = space.low.astype(np.float64)
        self._high = space.high.astype(np.float64)
        self._dtype = space.dtype
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=space.shape, dtype=np.float32)

    def action(self, action: Any) -> NDArray[Any]:
        """Map an action in ``[-1, 1]`` to the env's bounds.

        Raises:
            ValueError: if the action is outside ``[-1, 1]`` (beyond :attr:`TOLERANCE`) or has
                the wrong shape.
        """
        array = np.asarray(action, dtype=np.float64)
        if array.shape != self._low.shape:
            raise ValueError(
                f"action has shape {array.shape}, expected {self._low.shape} (the env's action "
                "space shape)"
            )
        if np.any(np.abs(array) > 1.0 + self.TOLERANCE):
            raise ValueError(
                f"action {array} is outside [-1, 1]; squash the policy output (e.g. tanh) or "
                "clip it before stepping"
            )
        mapped = self._low + (array + 1.0) * 0.5 * (self._high - self._low)
        return np.clip(mapped, self._low, self._high).astype(self._dtype)
