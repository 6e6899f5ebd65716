"""PARL 2.x's ``VectorEnv``: a list of old-API envs stepped together, reset when done.

For new code, gymnasium's vector envs with :class:`parl.utils.RolloutCollector` are faster
(batched observations, no Python lists); this class keeps ported PARL code running.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["VectorEnv"]


class VectorEnv:
    """Step several old-API envs (``reset() -> obs``, 4-tuple ``step``) as one.

    ``step`` resets an env as soon as it reports ``done`` and returns the first observation of
    its next episode in place of the last one (the final observation is lost, as in PARL).
    Wrap gymnasium envs in :class:`~parl.env.compat_wrappers.CompatWrapper` first.

    Args:
        envs: the environments.

    Examples:
        >>> import gymnasium
        >>> from parl.env import CompatWrapper
        >>> envs = VectorEnv([CompatWrapper(gymnasium.make("CartPole-v1")) for _ in range(4)])
        >>> obs_batch = envs.reset()
        >>> obs_batch, reward_batch, done_batch, info_batch = envs.step([0, 1, 0, 1])
    """

    def __init__(self, envs: Sequence[Any]) -> None:
        envs = list(envs)
        if not envs:
            raise ValueError("VectorEnv needs at least one env, got an empty sequence")
        for index, env in enumerate(envs):
            if not (callable(getattr(env, "reset", None)) and callable(getattr(env, "step", None))):
                raise TypeError(
                    f"envs[{index}] ({type(env).__name__}) has no reset()/step(); pass env "
                    "objects, e.g. CompatWrapper(gymnasium.make(...))"
                )
        self.envs = envs
        self.envs_num = len(envs)

    def reset(self) -> list[Any]:
        """Reset every env; returns the list of first observations."""
        return [env.reset() for env in self.envs]

    def step(self, actions: Sequence[Any]) -> tuple[list[Any], list[Any], list[bool], list[Any]]:
        """Step env ``i`` with ``actions[i]``; returns lists of obs, rewards, dones and infos.

        Raises:
            ValueError: if there is not exactly one action per env.
        """
        if len(actions) != self.envs_num:
            raise ValueError(
                f"step() needs one action per env: got {len(actions)} actions for "
                f"{self.envs_num} envs"
            )
        obs_batch, reward_batch, done_batch, info_batch = [], [], [], []
        for env, action in zip(self.envs, actions, strict=True):
            obs, reward, done, info = env.step(action)
            if done:
                obs = env.reset()
            obs_batch.append(obs)
            reward_batch.append(reward)
            done_batch.append(done)
            info_batch.append(info)
        return obs_batch, reward_batch, done_batch, info_batch
