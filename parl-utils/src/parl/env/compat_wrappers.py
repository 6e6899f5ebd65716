"""Old-gym and new-gym API adapters: PARL 2.x's ``CompatWrapper`` and :class:`LegacyGymWrapper`.

* :class:`CompatWrapper` shows a gymnasium env through the old gym API that PARL 2.x code is
  written against: ``obs = env.reset()`` and ``obs, reward, done, info = env.step(action)``.
* :class:`LegacyGymWrapper` goes the other way: an env written for old gym becomes a gymnasium
  env (gymnasium 1.x dropped its own ``EnvCompatibility``).
"""

from __future__ import annotations

import re
import warnings
from importlib import metadata
from typing import Any, Protocol, SupportsFloat

import gymnasium as gym

__all__ = [
    "V_GYM_CHANGED",
    "V_NPRANDOM_CHANGED",
    "CompatWrapper",
    "LegacyEnv",
    "LegacyGymWrapper",
    "OldGymAttributes",
    "OldGymDiscrete",
    "is_gym_version_ge",
]

V_GYM_CHANGED = "0.26.0"
"""The gym version whose ``reset``/``step`` return ``(obs, info)`` and a 5-tuple."""
V_NPRANDOM_CHANGED = "0.22.0"
"""The gym version whose ``np_random`` became a ``numpy.random.Generator``."""

TRUNCATED_KEY = "TimeLimit.truncated"
"""The info key old gym's ``TimeLimit`` set when it, not the env, ended an episode."""

_RELEASE = re.compile(r"^\s*(\d+(?:\.\d+)*)")


def _release(version: str, name: str) -> tuple[int, ...]:
    match = _RELEASE.match(version) if isinstance(version, str) else None
    if match is None:
        raise ValueError(f"{name} must be a version string such as '0.26.0', got {version!r}")
    return tuple(int(part) for part in match[1].split("."))


def is_gym_version_ge(compare_version: str) -> bool:
    """Whether the installed gymnasium is at least ``compare_version`` (PARL's helper).

    PARL compared the version of ``gym``; this package runs on gymnasium, whose 1.x API is
    the new one, so ``is_gym_version_ge(V_GYM_CHANGED)`` is True.

    Raises:
        ValueError: if ``compare_version`` is not a version string.
    """
    wanted = _release(compare_version, "compare_version")
    installed = _release(metadata.version("gymnasium"), "gymnasium's version")
    width = max(len(wanted), len(installed))
    return installed + (0,) * (width - len(installed)) >= wanted + (0,) * (width - len(wanted))


class OldGymDiscrete(gym.spaces.Discrete):
    """A gymnasium ``Discrete`` whose ``n`` and ``start`` are Python ints, as old gym's were.

    PARL 2.x code checks ``isinstance(env.action_space.n, int)``; gymnasium stores numpy ints.
    """

    def __init__(self, space: gym.spaces.Discrete) -> None:
        super().__init__(int(space.n), start=int(space.start), dtype=space.dtype)
        self.n = int(space.n)  # type: ignore[assignment]
        self.start = int(space.start)  # type: ignore[assignment]


class OldGymAttributes:
    """Old gym's attribute access for a wrapper: what PARL 2.x code reads through wrappers.

    A public name the wrapper lacks is looked up down the chain (``env.get_real_done()`` reaches
    :class:`~parl.env.atari_wrappers.TestEnv` through the outer wrappers), as old gym's
    ``Wrapper.__getattr__`` did and gymnasium 1.x no longer does; ``_max_episode_steps`` is
    the time limit of the chain's ``TimeLimit`` (None without one).
    """

    env: Any

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "env" or "env" not in vars(self):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        try:
            return self.env.get_wrapper_attr(name)
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}, nor has any env it "
                "wraps"
            ) from None

    @property
    def _max_episode_steps(self) -> int | None:
        """The time limit of the env's ``TimeLimit`` wrapper (None if it has none), as old gym."""
        try:
            return int(self.env.get_wrapper_attr("_max_episode_steps"))
        except AttributeError:
            return None


class CompatWrapper(OldGymAttributes, gym.Wrapper):
    """Show a gymnasium env through the old gym API, as PARL 2.x's ``CompatWrapper`` did.

    ``reset()`` returns the observation alone and ``step(action)`` returns
    ``(obs, reward, done, info)`` with ``done = terminated or truncated``. When ``done`` is
    True, ``info["TimeLimit.truncated"]`` says which: True when the episode was cut by a time
    limit (truncated without terminating), False when it terminated; that is the key old gym's
    ``TimeLimit`` set, so code that bootstraps on time limits keeps working.

    ``seed(s)`` makes the *next* ``reset`` use ``seed=s`` (PARL passed the stored seed to every
    reset, which replayed the same start state in each episode). A ``Discrete`` space's ``n`` is
    a Python int (:class:`OldGymDiscrete`), as old gym's was. Attributes of the wrapped chain
    are reachable as in old gym (:class:`OldGymAttributes`).

    The wrapped object speaks the old API: give it to old-API code, not to gymnasium's wrappers
    or vector envs (wrap the gymnasium env first, then put ``CompatWrapper`` outermost).

    Args:
        env: a gymnasium env.

    Examples:
        >>> env = CompatWrapper(gym.make("CartPole-v1"))
        >>> _ = env.seed(0)
        >>> obs = env.reset()
        >>> obs, reward, done, info = env.step(env.action_space.sample())
    """

    def __init__(self, env: gym.Env) -> None:
        if not isinstance(env, gym.Env):
            raise TypeError(
                f"CompatWrapper wraps a gymnasium.Env, got {type(env).__name__}; for an env "
                "written for old gym use it directly (it already has the old API) or wrap it "
                "in LegacyGymWrapper to use it with gymnasium"
            )
        super().__init__(env)
        if isinstance(env.action_space, gym.spaces.Discrete):
            self.action_space = OldGymDiscrete(env.action_space)
        if isinstance(env.observation_space, gym.spaces.Discrete):
            self.observation_space = OldGymDiscrete(env.observation_space)
        self._next_seed: int | None = None

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Seed the next :meth:`reset` (old gym's ``env.seed``); returns ``[seed]``."""
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        self._next_seed = seed
        return [seed]

    def reset(self, **kwargs: Any) -> Any:  # type: ignore[override]
        """Reset the env and return the first observation only (its info is dropped)."""
        if self._next_seed is not None:
            # An outer gymnasium wrapper passes seed=None explicitly: the stored seed wins then.
            if kwargs.get("seed") is None:
                kwargs["seed"] = self._next_seed
            self._next_seed = None
        obs, _ = self.env.reset(**kwargs)
        return obs

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, dict[str, Any]]:  # type: ignore[override]
        """Step the env; returns ``(obs, reward, done, info)``."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        done = bool(terminated or truncated)
        if done:
            info = {**info, TRUNCATED_KEY: bool(truncated and not terminated)}
        return obs, reward, done, info


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
        ``CompatWrapper`` makes a gymnasium env speak the legacy API, so it plays one here:

        >>> env = LegacyGymWrapper(CompatWrapper(gym.make("CartPole-v1")))
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
        truncated = bool(info.get(TRUNCATED_KEY, False))
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
