"""PARL 2.x's ``wrap_rms``: running normalisation of observations and rewards, on gymnasium.

The work is done by gymnasium's own wrappers (``RecordEpisodeStatistics``,
``NormalizeObservation``, ``NormalizeReward``); :class:`VecNormalizeEnv` puts PARL's old API and
its ``get_ob_rms``/``set_ob_rms``/``train``/``eval`` methods on top. Any env with a flat ``Box``
observation space works (MuJoCo is where PARL used it).
"""

from __future__ import annotations

from typing import Any, SupportsFloat

from parl.env.compat_wrappers import TRUNCATED_KEY, CompatWrapper

import gymnasium as gym
import numpy as np
from gymnasium.wrappers.utils import RunningMeanStd

__all__ = ["RunningMeanStd", "VecNormalizeEnv", "get_ob_rms", "wrap_rms"]

CLIP = 10.0
"""Normalised observations and rewards are clipped to ``[-CLIP, CLIP]``, as in PARL."""


class VecNormalizeEnv(CompatWrapper):
    """The outer layer of :func:`wrap_rms`: PARL's old API plus access to the statistics.

    ``info["bad_transition"] = True`` marks a step whose episode was cut by the time limit (the
    value function should bootstrap there); ``info["episode"] = {"r", "l", "t"}`` carries the raw
    return, length and duration of an episode at its last step.

    Args:
        env: the gymnasium chain built by :func:`wrap_rms`.
        obs_normalizer: its ``NormalizeObservation`` wrapper.
    """

    def __init__(self, env: gym.Env, obs_normalizer: gym.wrappers.NormalizeObservation) -> None:
        super().__init__(env)
        self._obs_normalizer = obs_normalizer
        self._awaiting_statistics = False

    def reset(self, **kwargs: Any) -> Any:  # type: ignore[override]
        """Reset the env; an evaluation env must have its training statistics by now."""
        if self._awaiting_statistics:
            raise RuntimeError(
                "this wrap_rms(test=True) env has no training statistics yet: call "
                "env.set_ob_rms(get_ob_rms(train_env)) before evaluating with it"
            )
        return super().reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, dict[str, Any]]:  # type: ignore[override]
        """Step the env; returns ``(obs, reward, done, info)`` (see the class docstring)."""
        obs, reward, done, info = super().step(action)
        if info.get(TRUNCATED_KEY):
            info["bad_transition"] = True
        return obs, reward, done, info

    def get_ob_rms(self) -> RunningMeanStd:
        """The running mean/variance of observations (``.mean``, ``.var``, ``.count``)."""
        return self._obs_normalizer.obs_rms

    def set_ob_rms(self, ob_rms: RunningMeanStd) -> None:
        """Normalise with ``ob_rms`` from now on (the object is shared, not copied, as in PARL).

        Raises:
            TypeError: if ``ob_rms`` lacks ``mean``/``var``.
        """
        if not (hasattr(ob_rms, "mean") and hasattr(ob_rms, "var")):
            raise TypeError(
                f"ob_rms must have .mean and .var (a RunningMeanStd, e.g. from "
                f"get_ob_rms(train_env)), got {type(ob_rms).__name__}"
            )
        self._obs_normalizer.obs_rms = ob_rms
        self._awaiting_statistics = False

    def train(self) -> None:
        """Update the observation statistics with every new observation (the default)."""
        self._obs_normalizer.update_running_mean = True

    def eval(self) -> None:
        """Freeze the observation statistics (for evaluation)."""
        self._obs_normalizer.update_running_mean = False


def wrap_rms(
    env: gym.Env, gamma: float | None, test: bool = False, ob_rms: RunningMeanStd | None = None
) -> VecNormalizeEnv:
    """Normalise observations and rewards with running statistics; PARL 2.x's signature.

    Training (``test=False``): observations are normalised by their running mean/std and
    rewards by the running std of the discounted return (``gamma``), both clipped to ±10.
    Testing (``test=True``): rewards stay raw and observations are normalised by ``ob_rms``,
    frozen (pass the training env's ``get_ob_rms(env)``; the object is shared, so evaluation
    sees the latest statistics). As in PARL's PPO example, ``ob_rms`` may instead come later
    through ``set_ob_rms``; resetting before that is an error, never an unnormalised episode.
    Episode statistics of the *raw* rewards are in ``info["episode"]``.

    The result speaks the old gym API (``obs = env.reset()``, 4-tuple ``step``), like PARL's.

    Args:
        env: a gymnasium env with a ``Box`` observation space.
        gamma: discount of the return whose std scales rewards; ignored when ``test``.
        test: build the evaluation variant.
        ob_rms: the training statistics, used when ``test``.

    Raises:
        ValueError: if ``gamma`` is missing or outside [0, 1] when training.
        TypeError: if the observation space is not a ``Box``.

    Examples:
        >>> env = wrap_rms(gym.make("Pendulum-v1"), gamma=0.99)
        >>> obs = env.reset()
        >>> eval_env = wrap_rms(gym.make("Pendulum-v1"), None, test=True,
        ...                     ob_rms=get_ob_rms(env))
    """
    if not isinstance(env.observation_space, gym.spaces.Box):
        raise TypeError(
            f"wrap_rms normalises Box observations, got {env.observation_space!r}; use it on "
            "continuous-control envs"
        )
    if not test and (gamma is None or not 0.0 <= gamma <= 1.0):
        raise ValueError(f"wrap_rms needs a discount gamma in [0, 1] for training, got {gamma!r}")
    env = gym.wrappers.RecordEpisodeStatistics(env)
    obs_normalizer = gym.wrappers.NormalizeObservation(env)
    clipped_space = gym.spaces.Box(-CLIP, CLIP, env.observation_space.shape, np.float32)
    env = gym.wrappers.TransformObservation(
        obs_normalizer, lambda obs: np.clip(obs, -CLIP, CLIP), clipped_space
    )
    if not test:
        env = gym.wrappers.NormalizeReward(env, gamma=float(gamma))  # type: ignore[arg-type]
        env = gym.wrappers.TransformReward(env, lambda reward: min(max(float(reward), -CLIP), CLIP))
    wrapped = VecNormalizeEnv(env, obs_normalizer)
    if test:
        wrapped.eval()
        if ob_rms is None:
            wrapped._awaiting_statistics = True
        else:
            wrapped.set_ob_rms(ob_rms)
    return wrapped


def get_ob_rms(env: Any) -> RunningMeanStd | None:
    """The observation statistics of the :func:`wrap_rms` env inside ``env``, or None if none.

    ``env`` may be the env :func:`wrap_rms` returned or any wrapper around it.
    """
    while env is not None:
        if isinstance(env, VecNormalizeEnv):
            return env.get_ob_rms()
        env = getattr(env, "env", None)
    return None
