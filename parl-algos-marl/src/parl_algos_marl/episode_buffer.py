"""EpisodeReplayBuffer: whole episodes, padded to one length, for recurrent learners (QMIX,
COMA)."""

from __future__ import annotations

from typing import NamedTuple

from parl.core.validation import positive_int

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["EpisodeBatch", "EpisodeReplayBuffer"]


class EpisodeBatch(NamedTuple):
    """Padded episodes in :meth:`QMIX.learn <parl_algos_marl.qmix.QMIX.learn>`'s order."""

    state: np.ndarray
    actions: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    obs: np.ndarray
    available_actions: np.ndarray
    filled: np.ndarray


class EpisodeReplayBuffer:
    """A ring buffer of episodes of at most ``episode_limit`` steps, stored padded.

    Each episode takes ``T = episode_limit + 1`` rows: row ``t`` holds the state, observations
    and available actions seen at step ``t`` and the actions, team reward and termination of
    the transition from it; the row after the last transition holds only what was seen at the
    end, and it and every later row are marked ``filled = 1`` (padding, PARL's convention).
    That end row's actions are 0, or the actions the policy picked at the final observation
    where :meth:`add` is given them (COMA's critic bootstraps from ``Q(s, u)`` there).

    Args:
        capacity: the number of episodes kept; the oldest is overwritten.
        episode_limit: the longest episode.
        n_agents, obs_dim, state_dim, n_actions: the sizes of what is stored.
        seed: seed of the sampling generator.
    """

    def __init__(
        self,
        capacity: int,
        episode_limit: int,
        n_agents: int,
        obs_dim: int,
        state_dim: int,
        n_actions: int,
        seed: int | None = None,
    ) -> None:
        self.capacity = positive_int("capacity", capacity)
        self.episode_limit = positive_int("episode_limit", episode_limit)
        rows = (self.capacity, self.episode_limit + 1)
        self._state = np.zeros((*rows, state_dim), np.float32)
        self._obs = np.zeros((*rows, n_agents, obs_dim), np.float32)
        self._available = np.zeros((*rows, n_agents, n_actions), np.float32)
        self._actions = np.zeros((*rows, n_agents), np.int64)
        self._reward = np.zeros((*rows, 1), np.float32)
        self._terminated = np.zeros((*rows, 1), np.float32)
        self._filled = np.ones((*rows, 1), np.float32)
        self._rng = np.random.default_rng(seed)
        self._size = 0
        self._next = 0

    def __len__(self) -> int:
        return self._size

    def add(
        self,
        state: ArrayLike,
        obs: ArrayLike,
        available_actions: ArrayLike,
        actions: ArrayLike,
        reward: ArrayLike,
        terminated: ArrayLike,
    ) -> None:
        """Store one episode of ``L`` transitions.

        Args:
            state, obs, available_actions: what was seen at steps ``0..L`` (``L + 1`` rows:
                the last is what the episode ended on).
            actions: the ``L`` transitions' actions, or ``L + 1`` rows whose last holds the
                actions picked at the final observation.
            reward, terminated: the ``L`` transitions (``terminated`` is 0 for a time-limit
                truncation).

        Raises:
            ValueError: a length or shape that does not fit; nothing is stored then.
        """
        arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {
            "actions": (np.asarray(actions), self._actions),
            "reward": (np.asarray(reward, np.float32).reshape(-1, 1), self._reward),
            "terminated": (np.asarray(terminated, np.float32).reshape(-1, 1), self._terminated),
            "state": (np.asarray(state, np.float32), self._state),
            "obs": (np.asarray(obs, np.float32), self._obs),
            "available_actions": (np.asarray(available_actions, np.float32), self._available),
        }
        length = len(arrays["reward"][0])
        if not 1 <= length <= self.episode_limit:
            raise ValueError(
                f"an episode must have 1 to {self.episode_limit} transitions, got {length}"
            )
        final_actions = len(arrays["actions"][0]) == length + 1
        for name, (array, store) in arrays.items():
            rows = length if name in ("reward", "terminated") else length + 1
            if name == "actions" and not final_actions:
                rows = length
            if array.shape != (rows, *store.shape[2:]):
                raise ValueError(
                    f"{name} must have shape {(rows, *store.shape[2:])} for an episode of "
                    f"{length} transitions, got {array.shape}"
                )
        slot = self._next
        for array, store in arrays.values():
            store[slot] = 0
            store[slot, : len(array)] = array
        self._filled[slot] = 1.0
        self._filled[slot, :length] = 0.0
        self._next = (slot + 1) % self.capacity
        self._size = min(self._size + 1, self.capacity)

    def latest(self, count: int) -> EpisodeBatch:
        """The ``count`` episodes added last, oldest first: an on-policy learner's batch."""
        count = positive_int("count", count)
        if count > self._size:
            raise ValueError(
                f"latest({count}) asks for more episodes than the {self._size} stored; add "
                "episodes first"
            )
        index = (self._next - count + np.arange(count)) % self.capacity
        return self._batch(index)

    def sample_batch(self, batch_size: int) -> EpisodeBatch:
        """``batch_size`` episodes drawn uniformly with replacement."""
        batch_size = positive_int("batch_size", batch_size)
        if not self._size:
            raise ValueError("cannot sample from an empty EpisodeReplayBuffer; add episodes first")
        return self._batch(self._rng.integers(0, self._size, batch_size))

    def _batch(self, index: np.ndarray) -> EpisodeBatch:
        return EpisodeBatch(
            self._state[index],
            self._actions[index],
            self._reward[index],
            self._terminated[index],
            self._obs[index],
            self._available[index],
            self._filled[index],
        )
