"""DQNAgent: the numpy-facing agent for DQN and DDQN, with batched epsilon-greedy acting."""

from __future__ import annotations

from parl.core.paddle import Agent

import numpy as np
import paddle
from numpy.typing import ArrayLike

from parl_algos_dqn.acting import EpsilonGreedyActing
from parl_algos_dqn.dqn import DQN

__all__ = ["DQNAgent"]


class DQNAgent(EpsilonGreedyActing, Agent):
    """Acts epsilon-greedily and trains a :class:`DQN`/``DDQN``, on one observation or a batch.

    ``predict`` and ``sample`` take one observation (as PARL 2.x's agents do) or a batch (one
    row per environment of a vector env, so one forward pass serves them all) and return one
    action or a ``[B]`` array. The target network is synced every ``target_update_interval``
    calls to :meth:`learn`. A checkpoint (:meth:`save_checkpoint`) keeps the learn-step count
    and the exploration generator, so a resumed run syncs and explores as the saved one would.

    Args:
        algorithm: a :class:`~parl_algos_dqn.dqn.DQN` or :class:`~parl_algos_dqn.ddqn.DDQN`.
        act_dim: number of discrete actions (for random exploration).
        target_update_interval: learn steps between hard target syncs; None leaves syncing
            to the caller (``agent.alg.sync_target()``).
        seed: seed of the exploration generator.

    Examples:
        >>> from parl_algos_dqn import DQN, DQNAgent, QNetwork
        >>> agent = DQNAgent(DQN(QNetwork(4, 2)), act_dim=2, target_update_interval=100)
        >>> agent.sample(np.zeros((3, 4), dtype=np.float32), epsilon=0.1).shape
        (3,)
        >>> int(agent.predict(np.zeros(4, dtype=np.float32))) in (0, 1)
        True
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
        super().__init__(algorithm)
        self._setup_acting(act_dim, target_update_interval, seed)

    def q_values(self, obs: ArrayLike) -> np.ndarray:
        """The Q values of one observation ``[act_dim]`` or a batch ``[B, act_dim]``."""
        q_values: np.ndarray = self.alg.predict(
            paddle.to_tensor(np.asarray(obs, dtype=np.float32))
        ).numpy()
        return q_values
