"""PPOAgent on torch: the paddle agent's acting (:mod:`parl_algos_pg.ppo_acting`), on a device."""

from __future__ import annotations

from parl.core.torch import Agent

import numpy as np
import torch

from parl_algos_pg.ppo_acting import PPOActing
from parl_algos_pg.torch.ppo import PPO

__all__ = ["PPOAgent"]


class PPOAgent(PPOActing, Agent):
    """Numpy-facing agent for a torch :class:`PPO` acting on ``N`` environments at once.

    Args:
        algorithm: a torch ``PPO``.
        seed: seed of the generator that shuffles minibatches.
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``; ``None`` keeps the algorithm's.

    Examples:
        >>> from parl_algos_pg.torch import DiscretePPOModel
        >>> agent = PPOAgent(PPO(DiscretePPOModel(obs_dim=4, act_dim=2)), seed=0)
        >>> value, action, logp = agent.sample(np.zeros((3, 4), np.float32))
        >>> value.shape, action.shape, logp.shape
        ((3,), (3,), (3,))
    """

    alg: PPO

    def __init__(
        self,
        algorithm: PPO,
        seed: int | None = None,
        *,
        device: str | torch.device | None = None,
    ) -> None:
        if not isinstance(algorithm, PPO):
            raise TypeError(f"PPOAgent needs a torch PPO algorithm, got {type(algorithm).__name__}")
        super().__init__(algorithm, device=device)
        self._setup_acting(seed)

    def _tensor(self, obs: np.ndarray) -> torch.Tensor:
        return self.to_tensor(obs)

    def _array(self, tensor: torch.Tensor) -> np.ndarray:
        return self.to_numpy(tensor)
