"""Environment wrappers: legacy gym envs as gymnasium envs, and [-1, 1] action mapping.

Gymnasium 1.x dropped ``EnvCompatibility`` (and ``shimmy`` is not a dependency), so
:class:`LegacyGymWrapper` adapts the old ``reset()``/``step()`` API itself.
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

__all__ = ["ActionMappingWrapper", "LegacyEnv", "LegacyGymWrapper"]


class LegacyEnv(Protocol):
    """The old gym API (gym < 0.26): what :class:`LegacyGymWrapper` accepts."""

    observation_space: Any
    action_space: Any

    def reset(self) -> Any: ...

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, dict[str, Any]]: ...


class LegacyGymWrapper(gym.Env):
    """Present an old-API env (``reset() -> obs``, ``step -> (obs, r, done, info)``) as gymnasium.

    ``step`` splits ``done`` with the ``TimeLimit.truncated`` info key that old gym's TimeLimit
    set: ``truncated = info.get("TimeLimit.truncated", False)`` and
    ``terminated = done and not truncated``. ``reset(seed=s)`` calls the env's ``seed(s)`` when
    it has one. Spaces are passed through as they are.

    Args:
        env: the legacy environment.

    Examples:
        >>> env = LegacyGymWrapper(OldCartPole())
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    """

    def __init__(self, env: LegacyEnv) -> None:
        for attribute in ("reset", "step", "observation_space", "action_space"):
            if not hasattr(env, attribute):
                raise TypeError(
                    f"{type(env).__name__} has no {attribute!r}; LegacyGymWrapper needs an env "
                    "with reset(), step(action), observation_space and action_space"
                )
        self.env = env
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        self.metadata = getattr(env, "metadata", {"render_modes": []})
        self.render_mode = getattr(env, "render_mode", None)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the env, seeding it first when ``seed`` is given; returns ``(obs, {})``.

        Raises:
            ValueError: if ``options`` are given (the old API cannot take them).
        """
        if options:
            raise ValueError(
                f"{type(self.env).__name__} uses the old gym API, whose reset() takes no "
                f"options; got options={options!r}. Configure the env directly instead"
            )
        super().reset(seed=seed)
        if seed is not None:
            seed_fn = getattr(self.env, "seed", None)
            if callable(seed_fn):
                seed_fn(seed)
            else:
                warnings.warn(
                    f"{type(self.env).__name__} has no seed() method; reset(seed={seed}) cannot "
                    "seed it, so episodes are not reproducible",
                    stacklevel=2,
                )
        return self.env.reset(), {}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env; returns ``(obs, reward, terminated, truncated, info)``."""
        obs, reward, done, info = self.env.step(action)
        truncated = bool(info.get("TimeLimit.truncated", False))
        terminated = bool(done) and not truncated
        return obs, reward, terminated, truncated, info

    def render(self) -> Any:
        """Render through the wrapped env; None if it cannot render."""
        render_fn = getattr(self.env, "render", None)
        return render_fn() if callable(render_fn) else None

    def close(self) -> None:
        """Close the wrapped env if it can be closed."""
        close_fn = getattr(self.env, "close", None)
        if callable(close_fn):
            close_fn()


class ActionMappingWrapper(gym.ActionWrapper):
    """Let the agent act in ``[-1, 1]`` and map each dimension linearly onto the Box bounds.

    ``a_env = low + (a + 1) / 2 * (high - low)``, per dimension (PARL used the bounds of
    dimension 0 for all), then clipped to ``[low, high]``. The wrapper's ``action_space`` is
    ``Box(-1, 1)`` of the same shape.

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
