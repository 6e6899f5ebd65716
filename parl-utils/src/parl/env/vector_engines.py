"""Vector envs of either engine, gymnasium's or EnvPool's, with the collector's autoreset.

:class:`parl.utils.RolloutCollector` needs a finished sub-env reset in the step that ended it
(``AutoresetMode.SAME_STEP``; see :mod:`parl.utils.rollout`). Gymnasium's vector envs can be
built so; EnvPool's (C++ stepping on its own threads, ``pip install "parl-utils[envpool]"``)
reset in the next step only, so :class:`SameStepAutoreset` resets them itself, in the same
step, and hands the final observations over in ``info["final_obs"]`` as gymnasium does.
:func:`parl.utils.make_vector_env` builds either by its ``engine`` argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["SameStepAutoreset", "make_envpool", "reset_by_id", "reset_by_mask"]

ENVPOOL_INSTALL = 'pip install "parl-utils[envpool]"'

PartialReset = Callable[[Any, np.ndarray], np.ndarray]
"""Resets the sub-envs of a vector env where a ``[N]`` bool mask is True; returns their first
observations, one row per reset sub-env in index order."""


def reset_by_mask(envs: Any, done: np.ndarray) -> np.ndarray:
    """Reset the ``done`` sub-envs of a gymnasium vector env (its ``reset_mask`` option)."""
    obs, _ = envs.reset(options={"reset_mask": done})
    return np.asarray(obs)[done]


def reset_by_id(envs: Any, done: np.ndarray) -> np.ndarray:
    """Reset the ``done`` sub-envs of an EnvPool env (``reset(env_id=...)``)."""
    obs, _ = envs.reset(env_id=np.flatnonzero(done).astype(np.int32))
    return np.asarray(obs)


class SameStepAutoreset(gym.vector.VectorWrapper):
    """A vector env that resets in the next step (``NEXT_STEP``) made to reset in the same one.

    After each step, the sub-envs whose episode ended are reset at once: the returned
    observation of such a sub-env is the first of its next episode, its last one goes to
    ``info["final_obs"]`` (an object array, masked by ``info["_final_obs"]``), and every step
    of every sub-env is a real transition, as :class:`parl.utils.RolloutCollector` needs.

    Args:
        envs: a vector env with ``autoreset_mode`` ``NEXT_STEP`` that can reset some of its
            sub-envs alone.
        partial_reset: how to reset those: :func:`reset_by_mask` (gymnasium's vector envs) or
            :func:`reset_by_id` (EnvPool's).

    Raises:
        ValueError: ``envs`` does not reset in the next step.
    """

    def __init__(self, envs: gym.vector.VectorEnv, partial_reset: PartialReset) -> None:
        mode = envs.metadata.get("autoreset_mode")
        if mode != gym.vector.AutoresetMode.NEXT_STEP:
            raise ValueError(
                f"SameStepAutoreset wraps vector envs that reset in the next step, got "
                f"autoreset_mode={mode}; a SAME_STEP env needs no wrapper"
            )
        super().__init__(envs)
        self.metadata = {**envs.metadata, "autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}
        self._partial_reset = partial_reset

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Step every sub-env, then reset those whose episode ended (see the class docstring)."""
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        done = np.asarray(terminations) | np.asarray(truncations)
        if done.any():
            obs = np.array(obs, copy=True)
            final_obs = np.empty(self.num_envs, dtype=object)
            for index in np.flatnonzero(done):
                final_obs[index] = obs[index].copy()
            obs[done] = self._partial_reset(self.env, done)
            infos = {**infos, "final_obs": final_obs, "_final_obs": done}
        return obs, rewards, terminations, truncations, infos


def make_envpool(env_id: str, num_envs: int, seed: int | None = None) -> gym.vector.VectorEnv:
    """EnvPool's vector env of ``num_envs`` copies of ``env_id``, resetting in the same step.

    Args:
        env_id: a task EnvPool has (``envpool.list_all_envs()``: the classic-control tasks,
            MuJoCo's ``HalfCheetah-v5`` and others, Atari's ``Pong-v5`` and others).
        seed: EnvPool seeds its sub-envs when it builds them (``seed + i`` for sub-env
            ``i``), not at ``reset``; None: 42, EnvPool's default.

    Raises:
        ImportError: EnvPool is not installed (the message gives the install line).
        ValueError: EnvPool has no task ``env_id``.
    """
    try:
        import envpool
    except ImportError as exc:
        raise ImportError(
            f"engine='envpool' needs EnvPool, which is not installed: {ENVPOOL_INSTALL} "
            "(EnvPool 1.x: Python >= 3.11, wheels for Linux and macOS), or use "
            "engine='gymnasium'"
        ) from exc
    if env_id not in envpool.list_all_envs():
        raise ValueError(
            f"EnvPool has no task {env_id!r}; envpool.list_all_envs() lists its tasks, or use "
            "engine='gymnasium'"
        )
    options: dict[str, Any] = {} if seed is None else {"seed": seed}
    pool: Any = envpool.make_gymnasium(env_id, num_envs=num_envs, **options)  # a VectorEnv
    return SameStepAutoreset(pool, reset_by_id)
