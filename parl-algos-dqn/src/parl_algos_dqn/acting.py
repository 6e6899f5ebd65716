"""What a DQN agent does on either backend: epsilon-greedy acting and target-sync cadence."""

from __future__ import annotations

from typing import Any, ClassVar

from parl.core.validation import positive_int

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["EpsilonGreedyActing"]


class EpsilonGreedyActing:
    """The numpy side of ``DQNAgent`` (paddle's and torch's): they add :meth:`q_values`.

    A checkpoint keeps ``learn_steps`` and the exploration generator ``rng``, so a resumed run
    syncs and explores as the saved one would.
    """

    alg: Any
    checkpoint_state: ClassVar[tuple[str, ...]] = ("learn_steps", "rng")

    def _setup_acting(
        self, act_dim: int, target_update_interval: int | None, seed: int | None
    ) -> None:
        self.act_dim = positive_int("act_dim", act_dim)
        self.target_update_interval = (
            None
            if target_update_interval is None
            else positive_int("target_update_interval", target_update_interval)
        )
        self.learn_steps = 0
        self.rng = np.random.default_rng(seed)

    def q_values(self, obs: ArrayLike) -> np.ndarray:
        """The Q values of one observation ``[act_dim]`` or a batch ``[B, act_dim]``."""
        raise NotImplementedError

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """Return the greedy action(s): int64 ``[B]`` for a batch, a 0-d array for one obs."""
        return self.q_values(obs).argmax(axis=-1)

    def sample(self, obs: ArrayLike, epsilon: float) -> np.ndarray:
        """Return epsilon-greedy action(s), shaped as :meth:`predict`'s.

        Each observation takes a uniformly random action with probability ``epsilon``, else
        the greedy one.
        """
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        greedy = self.predict(obs)
        explore = self.rng.random(greedy.shape) < epsilon
        return np.where(explore, self.rng.integers(0, self.act_dim, size=greedy.shape), greedy)

    def learn(
        self,
        obs: ArrayLike,
        action: ArrayLike,
        reward: ArrayLike,
        next_obs: ArrayLike,
        terminal: ArrayLike,
    ) -> Any:
        """Take one gradient step on a numpy batch and return the loss tensor.

        ``terminal`` is 1 only for *terminated* transitions (not for time-limit truncations).
        Call ``float(loss)`` only when logging, to avoid a sync per step.
        """
        loss = self.alg.learn(obs, action, reward, next_obs, terminal)
        self.learn_steps += 1
        if self.target_update_interval and self.learn_steps % self.target_update_interval == 0:
            self.alg.sync_target()
        return loss
