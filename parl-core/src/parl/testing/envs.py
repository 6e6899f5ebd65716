"""Tiny gymnasium environments whose optimal policy is the identity: for learning tests."""

from __future__ import annotations

from typing import Any

from parl.core.validation import positive_int

import gymnasium as gym
import numpy as np


class _IdentityTask(gym.Env[np.ndarray, Any]):
    """Episode bookkeeping shared by the identity tasks: a fresh observation every step.

    Subclasses set the spaces and define :meth:`_observe` (draw the next observation) and
    :meth:`_reward` (score an action against the current observation).
    """

    # gymnasium declares `metadata` as an instance attribute, so no ClassVar here.
    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self, episode_length: int) -> None:
        self.episode_length = positive_int("episode_length", episode_length)
        self._steps = 0

    def _observe(self) -> np.ndarray:
        raise NotImplementedError

    def _reward(self, action: Any) -> float:
        raise NotImplementedError

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._steps = 0
        return self._observe(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        reward = self._reward(action)
        self._steps += 1
        return self._observe(), reward, self._steps >= self.episode_length, False, {}


class IdentityEnv(_IdentityTask):
    """Discrete identity task: the observation one-hot encodes a target, reward 1 for naming it.

    Every step draws a new target, so the best return is ``episode_length``; a random policy
    gets ``episode_length / n``. The episode terminates after ``episode_length`` steps.

    Args:
        n: number of targets (and actions).
        episode_length: steps per episode.
    """

    def __init__(self, n: int = 4, episode_length: int = 20) -> None:
        super().__init__(episode_length)
        self.n = positive_int("n", n)
        if self.n < 2:
            raise ValueError(f"n must be at least 2 (one target is no task), got {n}")
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(n)
        self._target = 0

    def _observe(self) -> np.ndarray:
        self._target = int(self.np_random.integers(self.n))
        obs = np.zeros(self.n, dtype=np.float32)
        obs[self._target] = 1.0
        return obs

    def _reward(self, action: Any) -> float:
        if not self.action_space.contains(np.int64(action)):
            raise ValueError(f"action must be an int in [0, {self.n}), got {action!r}")
        return 1.0 if int(action) == self._target else 0.0


class IdentityEnvBox(_IdentityTask):
    """Continuous identity task: reward ``-mean((action - obs)²)``, best return 0.

    Observations are uniform in ``[-1, 1]^dim``; the episode terminates after
    ``episode_length`` steps.

    Args:
        dim: observation and action dimension.
        episode_length: steps per episode.
    """

    def __init__(self, dim: int = 1, episode_length: int = 20) -> None:
        super().__init__(episode_length)
        self.dim = positive_int("dim", dim)
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(dim,), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(dim,), dtype=np.float32)
        self._obs = np.zeros(dim, dtype=np.float32)

    def _observe(self) -> np.ndarray:
        self._obs = self.np_random.uniform(-1.0, 1.0, self.dim).astype(np.float32)
        return self._obs

    def _reward(self, action: Any) -> float:
        act = np.asarray(action, dtype=np.float32).reshape(-1)
        if act.shape != (self.dim,):
            raise ValueError(f"action must have shape ({self.dim},), got {np.shape(action)}")
        return -float(np.mean((act - self._obs) ** 2))


class CooperativeIdentityEnv(_IdentityTask):
    """A cooperative multi-agent identity game: every agent must name its own target.

    Each of ``n_agents`` agents sees a one-hot of its own target (the observation is
    ``[n_agents, n]``, row ``i`` agent ``i``'s); the team shares one reward, the fraction of
    agents that named their target, so the best return is ``episode_length`` and a random team
    gets ``episode_length / n``. Actions are ``MultiDiscrete([n] * n_agents)``, one per agent;
    :meth:`state` (the global state a centralised critic or mixer sees) is the observation
    flattened. For the contract tests of multi-agent families (QMIX, MAPPO).

    Args:
        n_agents: number of agents, >= 2.
        n: number of targets (and actions) per agent, >= 2.
        episode_length: steps per episode.
    """

    def __init__(self, n_agents: int = 2, n: int = 3, episode_length: int = 5) -> None:
        super().__init__(episode_length)
        self.n_agents = positive_int("n_agents", n_agents)
        self.n = positive_int("n", n)
        if self.n_agents < 2 or self.n < 2:
            raise ValueError(
                f"CooperativeIdentityEnv needs n_agents >= 2 and n >= 2, got {n_agents} and {n}"
            )
        self.observation_space = gym.spaces.Box(0.0, 1.0, (n_agents, n), np.float32)
        self.action_space = gym.spaces.MultiDiscrete([n] * n_agents)
        self._targets = np.zeros(n_agents, np.int64)

    def state(self) -> np.ndarray:
        """The global state: every agent's observation, flattened."""
        return np.eye(self.n, dtype=np.float32)[self._targets].reshape(-1)

    def _observe(self) -> np.ndarray:
        self._targets = self.np_random.integers(self.n, size=self.n_agents)
        return np.eye(self.n, dtype=np.float32)[self._targets]

    def _reward(self, action: Any) -> float:
        actions = np.asarray(action)
        if actions.shape != (self.n_agents,) or not self.action_space.contains(
            actions.astype(np.int64)
        ):
            raise ValueError(
                f"action must be {self.n_agents} ints in [0, {self.n}), one per agent, got "
                f"{action!r}"
            )
        return float(np.mean(actions == self._targets))
