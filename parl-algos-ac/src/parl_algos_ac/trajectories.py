"""Trajectory data for return-conditioned policies (the Decision Transformer): K-step segments
of a dataset's episodes with their returns-to-go, and an environment wrapper that tells the
policy the return it still has to collect."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from parl.utils.offline import check_dataset

import gymnasium as gym
import numpy as np

__all__ = ["ReturnConditioning", "Segments", "TrajectorySegments"]


class Segments(NamedTuple):
    """A batch of K-step segments, padded at the end where an episode ran out.

    Attributes:
        states: ``[B, K, obs_dim]`` float32 (raw, not normalised).
        actions: ``[B, K, act_dim]`` float32.
        returns_to_go: ``[B, K]`` float32: the rewards still to come in the episode from each
            step on, that step's reward included.
        timesteps: ``[B, K]`` int64 episode steps.
        mask: ``[B, K]`` float32: 1 for the segment's steps, 0 for padding.
    """

    states: np.ndarray
    actions: np.ndarray
    returns_to_go: np.ndarray
    timesteps: np.ndarray
    mask: np.ndarray


class TrajectorySegments:
    """Samples K-step segments of a D4RL-layout dataset's episodes, as the Decision Transformer
    trains on them (Chen et al., 2021).

    Episodes end at a terminal or a timeout (a trailing unfinished episode counts as one). A
    segment starts at a step drawn uniformly over all steps of the dataset (long episodes
    give more segments) and runs K steps or to its episode's end; the rest is zero padding
    with ``mask`` 0. Also gives the states' mean and standard deviation, which the agent
    normalises by.

    Args:
        dataset: observations, actions (continuous), rewards, terminals, timeouts.
        context_length: K.
        seed: seeds the sampling generator.
        max_episode_steps: timesteps at or above it are given as ``max_episode_steps - 1``
            (the model's timestep embedding holds that many).

    Examples:
        >>> import numpy as np
        >>> data = {"observations": np.zeros((6, 2)), "actions": np.zeros((6, 1)),
        ...         "rewards": np.ones(6), "next_observations": np.zeros((6, 2)),
        ...         "terminals": np.array([0, 0, 1, 0, 0, 1])}
        >>> segments = TrajectorySegments(data, context_length=4, seed=0)
        >>> segments.episode_lengths.tolist(), segments.sample(8).states.shape
        ([3, 3], (8, 4, 2))
    """

    def __init__(
        self,
        dataset: Mapping[str, Any],
        context_length: int,
        seed: int | None = None,
        max_episode_steps: int = 1000,
    ) -> None:
        data = check_dataset(dataset, "TrajectorySegments")
        if data["actions"].ndim != 2:
            raise ValueError(
                "TrajectorySegments needs continuous actions [N, act_dim], got shape "
                f"{data['actions'].shape}"
            )
        if context_length < 1 or max_episode_steps < 1:
            raise ValueError(
                f"context_length and max_episode_steps must be >= 1, got {context_length} and "
                f"{max_episode_steps}"
            )
        self.context_length, self.max_episode_steps = int(context_length), int(max_episode_steps)
        self.states, self.actions = data["observations"], data["actions"]
        rows = len(self.states)
        ends = np.flatnonzero(data["terminals"] | data["timeouts"]) + 1
        if not len(ends) or ends[-1] != rows:
            ends = np.append(ends, rows)
        starts = np.concatenate([[0], ends[:-1]])
        self.episode_lengths = ends - starts
        episode = np.repeat(np.arange(len(starts)), self.episode_lengths)
        self.episode_end = ends[episode]
        self.timestep = np.arange(rows) - starts[episode]
        # Returns-to-go: the reversed running sum of each episode's rewards.
        rewards = data["rewards"].astype(np.float64)
        total = np.cumsum(rewards[::-1])[::-1]
        after_end = np.append(total, 0.0)[self.episode_end]
        self.returns_to_go = (total - after_end).astype(np.float32)
        self.obs_mean = self.states.mean(axis=0)
        self.obs_std = self.states.std(axis=0) + 1e-6
        self.rng = np.random.default_rng(seed)

    def sample(self, batch_size: int, rng: np.random.Generator | None = None) -> Segments:
        """``batch_size`` segments drawn with ``rng``, the sampler's own generator if None."""
        start = (rng or self.rng).integers(0, len(self.states), batch_size)
        index = start[:, None] + np.arange(self.context_length)
        valid = index < self.episode_end[start][:, None]
        index = np.where(valid, index, start[:, None])
        mask = valid.astype(np.float32)
        timesteps = np.minimum(self.timestep[index], self.max_episode_steps - 1)
        return Segments(
            states=self.states[index] * mask[..., None],
            actions=self.actions[index] * mask[..., None],
            returns_to_go=self.returns_to_go[index] * mask,
            timesteps=(timesteps * valid).astype(np.int64),
            mask=mask,
        )


class ReturnConditioning(gym.ObservationWrapper):
    """Appends the return still to collect and the episode step to each observation.

    The remaining return starts at ``target_return`` and loses each reward received, as the
    Decision Transformer is conditioned at evaluation; the observation becomes
    ``[*obs, remaining_return, timestep]`` (float32), what :class:`~parl_algos_ac.dt.DTAgent`
    reads. Wrap the environment outside any reward scaling, so the rewards are the dataset's.

    Args:
        env: an environment with a flat Box observation space.
        target_return: the return asked for at the start of each episode.
    """

    def __init__(self, env: gym.Env, target_return: float) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise ValueError(
                f"ReturnConditioning needs a flat Box observation space, got {space}; flatten "
                "the observations first (gymnasium.wrappers.FlattenObservation)"
            )
        low = np.append(space.low, [-np.inf, 0.0]).astype(np.float32)
        high = np.append(space.high, [np.inf, np.inf]).astype(np.float32)
        self.observation_space = gym.spaces.Box(low, high, dtype=np.float32)
        self.target_return = float(target_return)
        self.remaining, self.steps = self.target_return, 0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        self.remaining, self.steps = self.target_return, 0
        return super().reset(**kwargs)

    def step(self, action: Any) -> tuple[np.ndarray, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.remaining -= float(reward)
        self.steps += 1
        return self.observation(obs), reward, terminated, truncated, info

    def observation(self, observation: Any) -> np.ndarray:
        extra = [self.remaining, float(self.steps)]
        return np.append(np.asarray(observation, np.float32), extra).astype(np.float32)
