"""DQNAgent: the numpy-facing agent for DQN and DDQN, with batched epsilon-greedy acting."""

from __future__ import annotations

import parl

import numpy as np
import paddle
from numpy.typing import ArrayLike

from parl_algos_dqn.dqn import DQN

__all__ = ["DQNAgent"]


class DQNAgent(parl.Agent):
    """Acts epsilon-greedily on a batch of observations and trains a :class:`DQN`/``DDQN``.

    Every call takes a batch (one row per environment of a vector env), so one forward pass
    serves all environments; a single observation is ``obs[None]``. The target network is
    synced every ``target_update_interval`` calls to :meth:`learn`.

    Args:
        algorithm: a :class:`~parl_algos_dqn.dqn.DQN` or :class:`~parl_algos_dqn.ddqn.DDQN`.
        act_dim: number of discrete actions (for random exploration without a forward pass).
        target_update_interval: learn steps between hard target syncs; None leaves syncing
            to the caller (``agent.alg.sync_target()``).
        seed: seed of the exploration generator.

    Examples:
        >>> from parl_algos_dqn import DQN, DQNAgent, QNetwork
        >>> agent = DQNAgent(DQN(QNetwork(4, 2)), act_dim=2, target_update_interval=100)
        >>> agent.sample(np.zeros((3, 4), dtype=np.float32), epsilon=0.1).shape
        (3,)
    """

    alg: DQN

    def __init__(
        self,
        algorithm: DQN,
        act_dim: int,
        *,
        target_update_interval: int | None = None,
        seed: int | None = None,
    ) -> None:
        if not isinstance(algorithm, DQN):
            raise TypeError(
                f"DQNAgent needs a DQN or DDQN algorithm, got {type(algorithm).__name__}"
            )
        if isinstance(act_dim, bool) or not isinstance(act_dim, int) or act_dim < 1:
            raise ValueError(f"act_dim must be a positive int, got {act_dim!r}")
        if target_update_interval is not None and (
            isinstance(target_update_interval, bool)
            or not isinstance(target_update_interval, int)
            or target_update_interval < 1
        ):
            raise ValueError(
                "target_update_interval must be a positive int or None, got "
                f"{target_update_interval!r}"
            )
        super().__init__(algorithm)
        self.act_dim = act_dim
        self.target_update_interval = target_update_interval
        self.learn_steps = 0
        self._rng = np.random.default_rng(seed)

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """Return the greedy actions (int64 ``[B]``) for observations ``[B, *obs_shape]``."""
        batch = np.asarray(obs, dtype=np.float32)
        if batch.ndim < 2:
            raise ValueError(
                f"DQNAgent.predict needs a batch [B, *obs_shape], got shape {batch.shape}; "
                "for one observation pass obs[None]"
            )
        q_values = self.alg.predict(paddle.to_tensor(batch))
        return q_values.numpy().argmax(axis=1)

    def sample(self, obs: ArrayLike, epsilon: float) -> np.ndarray:
        """Return epsilon-greedy actions (int64 ``[B]``), one per row of ``obs``.

        Each row takes a uniformly random action with probability ``epsilon``, else the
        greedy one; the forward pass is skipped when every row explores.
        """
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        batch = np.asarray(obs, dtype=np.float32)
        size = batch.shape[0] if batch.ndim else 0
        explore = self._rng.random(size) < epsilon
        actions = self._rng.integers(0, self.act_dim, size=size)
        if not explore.all():
            greedy = self.predict(batch)
            actions = np.where(explore, actions, greedy)
        return actions

    def learn(
        self,
        obs: ArrayLike,
        action: ArrayLike,
        reward: ArrayLike,
        next_obs: ArrayLike,
        terminal: ArrayLike,
    ) -> paddle.Tensor:
        """Take one gradient step on a numpy batch and return the loss tensor.

        ``terminal`` is 1 only for *terminated* transitions (not for time-limit truncations).
        Call ``float(loss)`` only when logging, to avoid a sync per step.
        """
        loss = self.alg.learn(
            paddle.to_tensor(np.asarray(obs, dtype=np.float32)),
            paddle.to_tensor(np.asarray(action, dtype=np.int64)),
            paddle.to_tensor(np.asarray(reward, dtype=np.float32)),
            paddle.to_tensor(np.asarray(next_obs, dtype=np.float32)),
            paddle.to_tensor(np.asarray(terminal, dtype=np.float32)),
        )
        self.learn_steps += 1
        if self.target_update_interval and self.learn_steps % self.target_update_interval == 0:
            self.alg.sync_target()
        return loss
