"""PARL 2.x's ``wrap_deepmind``: DeepMind-style Atari preprocessing for ale-py envs.

Built on gymnasium's ``AtariPreprocessing`` (no-op starts, frame skipping with max-pooling,
grey-scale resize), ``FrameStackObservation`` and ``RecordEpisodeStatistics`` (as
:class:`MonitorEnv`, PARL's name and readers); gymnasium has no
wrappers for "a lost life ends the episode but not the game" and "press FIRE to start", so
:class:`EpisodicLifeEnv` and :class:`FireResetEnv` are here. Needs ``ale-py`` and OpenCV:
``pip install "parl-utils[atari]"``. Importing this module registers ale-py's games with
gymnasium, as old gym did, so PARL 2.x's Atari programs need no ``import ale_py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Literal, SupportsFloat

from parl.env.compat_wrappers import CompatWrapper
from parl.utils._validation import positive_int

import gymnasium as gym
import numpy as np

# Importing ale-py registers the Atari envs with gymnasium, so that, as with old gym's atari
# extra, gym.make("PongNoFrameskip-v4") works in a program that imports this module. Without
# the [atari] extra nothing is registered, and _ale() names what to install.
with contextlib.suppress(ImportError):
    import ale_py  # noqa: F401

__all__ = [
    "EpisodicLifeEnv",
    "FireResetEnv",
    "MonitorEnv",
    "TestEnv",
    "get_wrapper_by_cls",
    "wrap_deepmind",
]

_STEP = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
_NOOP, _FIRE = 0, 1


def _ale(env: gym.Env) -> Any:
    ale = getattr(env.unwrapped, "ale", None)
    if ale is None:
        raise TypeError(
            f"{type(env.unwrapped).__name__} is not an Atari env; wrap_deepmind needs an ale-py "
            'env such as gymnasium.make("PongNoFrameskip-v4") (pip install "parl-utils[atari]" '
            "and import ale_py before gymnasium.make)"
        )
    return ale


class MonitorEnv(gym.wrappers.RecordEpisodeStatistics):
    """Whole-game statistics, PARL 2.x's ``MonitorEnv`` on gymnasium's ``RecordEpisodeStatistics``.

    It sits at the bottom of :func:`wrap_deepmind`'s chain, so it sees raw rewards and whole
    games (not lives). At each game's end ``info["episode"]`` holds ``r`` (return), ``l``
    (length) and ``t`` (seconds); every game is also kept for PARL's readers:
    :meth:`get_episode_rewards`, :meth:`get_episode_lengths`, :meth:`get_total_steps` and
    :meth:`next_episode_results`.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._episode_rewards: list[float] = []
        self._episode_lengths: list[int] = []
        self._total_steps = 0
        self._num_returned = 0

    def step(self, action: Any) -> _STEP:
        """Step; a finished game's return and length are recorded."""
        obs, reward, terminated, truncated, info = super().step(action)
        self._total_steps += 1
        if terminated or truncated:
            self._episode_rewards.append(float(info["episode"]["r"]))
            self._episode_lengths.append(int(info["episode"]["l"]))
        return obs, reward, terminated, truncated, info

    def get_episode_rewards(self) -> list[float]:
        """The return of every finished game, oldest first."""
        return self._episode_rewards

    def get_episode_lengths(self) -> list[int]:
        """The length (steps of the wrapped env) of every finished game, oldest first."""
        return self._episode_lengths

    def get_total_steps(self) -> int:
        """Steps taken through this wrapper since it was made."""
        return self._total_steps

    def next_episode_results(self) -> Iterator[tuple[float, int]]:
        """Yield ``(return, length)`` of each game finished since the previous call."""
        start, self._num_returned = self._num_returned, len(self._episode_rewards)
        yield from zip(
            self._episode_rewards[start : self._num_returned],
            self._episode_lengths[start : self._num_returned],
            strict=True,
        )


class EpisodicLifeEnv(gym.Wrapper):
    """A lost life terminates the episode, but only game over resets the game.

    The value function then sees the cost of losing a life, while the agent still plays every
    life of a game (DeepMind's DQN setting). ``reset`` after a lost life takes one no-op step.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._ale = _ale(env)
        self.lives = 0
        self.was_real_done = True

    def step(self, action: Any) -> _STEP:
        """Step; ``terminated`` is also True when a life was lost."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.was_real_done = terminated or truncated
        lives = self._ale.lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset the game after game over; after a lost life, continue it with a no-op."""
        if self.was_real_done:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(_NOOP)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.lives = self._ale.lives()
        return obs, info


class FireResetEnv(gym.Wrapper):
    """Press FIRE (then action 2) after a reset, for games that wait for it to start."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        _ale(env)
        meanings = env.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
        if len(meanings) < 3 or meanings[_FIRE] != "FIRE":
            raise ValueError(f"FireResetEnv needs FIRE as action 1, got actions {meanings}")

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset, then take FIRE and action 2 (resetting again if either ends the game)."""
        obs, info = self.env.reset(**kwargs)
        for action in (_FIRE, 2):
            obs, _, terminated, truncated, _ = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


class TestEnv(gym.Wrapper):
    """Evaluation episodes of ``test_episodes`` whole games: ``info["episode"]`` is their mean.

    The env resets between the games itself; at the last game's end ``info["episode"]`` holds
    ``r`` and ``l``, the mean raw return and length of the games, and ``returns``, all of them.

    PARL 2.x's readers work too: after the ``reset`` that follows a finished evaluation,
    :meth:`get_real_done` is True and :meth:`get_eval_rewards` gives the games' returns, so
    PARL's loop ``while not env.get_real_done(): ... if done: obs = env.reset()`` ends there.
    """

    def __init__(self, env: gym.Env, test_episodes: int = 3) -> None:
        super().__init__(env)
        self.test_episodes = positive_int("test_episodes", test_episodes)
        self._games: list[dict[str, Any]] = []
        self._finished: list[float] | None = None
        self._eval_rewards: list[float] | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Start a new evaluation of ``test_episodes`` games."""
        self._eval_rewards, self._finished = self._finished, None
        self._games = []
        return self.env.reset(**kwargs)

    def get_real_done(self) -> bool:
        """Whether the last ``reset`` followed a finished evaluation (PARL's reader)."""
        return self._eval_rewards is not None

    def get_eval_rewards(self) -> list[float] | None:
        """The raw returns of the evaluation finished before the last ``reset``, else None."""
        return self._eval_rewards

    def step(self, action: Any) -> _STEP:
        """Step; a game's end resets the env unless it was the last game of the evaluation."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if not (terminated or truncated):
            return obs, reward, terminated, truncated, info
        self._games.append(info["episode"])
        if len(self._games) < self.test_episodes:
            obs, _ = self.env.reset()
            return obs, reward, False, False, {}
        returns = [float(game["r"]) for game in self._games]
        lengths = [int(game["l"]) for game in self._games]
        info = {**info, "episode": {"r": float(np.mean(returns)), "l": float(np.mean(lengths))}}
        info["episode"]["returns"] = returns
        self._finished = returns
        return obs, reward, terminated, truncated, info


def wrap_deepmind(
    env: gym.Env,
    dim: int = 84,
    framestack: bool = True,
    obs_format: Literal["NHWC", "NCHW"] = "NHWC",
    test: bool = False,
    test_episodes: int = 3,
) -> CompatWrapper:
    """DeepMind-style Atari preprocessing with PARL 2.x's signature and old-API result.

    Training: 1-30 no-op starts, 4 frames per step (when the env does not skip frames itself)
    max-pooled over the last two, grey ``dim x dim`` frames, a lost life ends the episode
    (:class:`EpisodicLifeEnv`), FIRE after reset where the game needs it, rewards clipped to
    their sign, the last 4 frames stacked. Testing (``test=True``): whole games, raw rewards,
    and each episode is ``test_episodes`` games (:class:`TestEnv`). ``info["episode"]`` holds
    the raw return ``r`` and length ``l`` (in frames) at the end of a game.

    Args:
        env: an ale-py env, e.g. ``gymnasium.make("PongNoFrameskip-v4")``.
        dim: side of the square frames.
        framestack: stack the last 4 frames.
        obs_format: ``"NHWC"`` (frames last, ``[dim, dim, 4]``) or ``"NCHW"`` (``[4, dim, dim]``).
        test: build the evaluation variant.
        test_episodes: games per evaluation episode when ``test``.

    Returns:
        The wrapped env, speaking the old gym API (``obs = env.reset()``, 4-tuple ``step``).

    Raises:
        TypeError: if ``env`` is not an Atari env.
        ValueError: if ``dim``, ``obs_format`` or ``test_episodes`` is invalid.
    """
    _ale(env)
    dim = positive_int("dim", dim)
    if obs_format not in ("NHWC", "NCHW"):
        raise ValueError(f"obs_format must be 'NHWC' or 'NCHW', got {obs_format!r}")
    frame_skip = 4 if getattr(env.unwrapped, "_frameskip", 1) == 1 else 1
    env = MonitorEnv(env)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=30, frame_skip=frame_skip, screen_size=dim)
    if not test:
        env = EpisodicLifeEnv(env)
    if "FIRE" in env.unwrapped.get_action_meanings():  # type: ignore[attr-defined]
        env = FireResetEnv(env)
    if not test:
        env = gym.wrappers.TransformReward(env, lambda reward: float(np.sign(float(reward))))
    if framestack:
        env = gym.wrappers.FrameStackObservation(env, 4)
        if obs_format == "NHWC":
            space = env.observation_space
            assert isinstance(space, gym.spaces.Box) and space.shape is not None
            nhwc = gym.spaces.Box(0, 255, (*space.shape[1:], space.shape[0]), np.uint8)
            env = gym.wrappers.TransformObservation(env, lambda obs: np.moveaxis(obs, 0, -1), nhwc)
    if test:
        env = TestEnv(env, test_episodes)
    return CompatWrapper(env)


def get_wrapper_by_cls(env: Any, cls: type) -> Any:
    """The first wrapper of type ``cls`` in ``env``'s chain (``env`` itself included), or None."""
    while env is not None:
        if isinstance(env, cls):
            return env
        env = getattr(env, "env", None)
    return None
