"""DQNAgent on torch: the paddle agent's acting (:mod:`parl_algos_dqn.acting`), on a device."""

from __future__ import annotations

from parl.core.torch import Agent

import numpy as np
import torch
from numpy.typing import ArrayLike

from parl_algos_dqn.acting import EpsilonGreedyActing
from parl_algos_dqn.torch.dqn import DQN

__all__ = ["DQNAgent"]


class DQNAgent(EpsilonGreedyActing, Agent):
    """Acts epsilon-greedily and trains a torch :class:`DQN`/``DDQN`` (as the paddle agent).

    Args:
        algorithm: a :class:`~parl_algos_dqn.torch.DQN` or ``DDQN``.
        act_dim: number of discrete actions (for random exploration).
        target_update_interval: learn steps between hard target syncs; None leaves syncing
            to the caller (``agent.alg.sync_target()``).
        seed: seed of the exploration generator.
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``; ``None`` keeps the algorithm's.
    """

    alg: DQN

    def __init__(
        self,
        algorithm: DQN,
        act_dim: int,
        *,
        target_update_interval: int | None = None,
        seed: int | None = None,
        device: str | torch.device | None = None,
    ) -> None:
        if not isinstance(algorithm, DQN):
            raise TypeError(
                f"DQNAgent needs a torch DQN or DDQN algorithm, got {type(algorithm).__name__}"
            )
        super().__init__(algorithm, device=device)
        self._setup_acting(act_dim, target_update_interval, seed)

    def q_values(self, obs: ArrayLike) -> np.ndarray:
        """The Q values of one observation ``[act_dim]`` or a batch ``[B, act_dim]``."""
        return self.to_numpy(self.alg.predict(self.to_tensor(obs)))
