"""Double DQN (DDQN) on torch: DQN with the greedy next action chosen by the online network."""

from __future__ import annotations

import torch

from parl_algos_dqn.config import DQNConfig
from parl_algos_dqn.torch.dqn import DQN

__all__ = ["DDQN", "DQNConfig"]


class DDQN(DQN):
    """Double Deep Q-Network, DDQN (van Hasselt, Guez and Silver, AAAI 2016), on torch.

    Paper: "Deep Reinforcement Learning with Double Q-learning". As
    :class:`parl_algos_dqn.ddqn.DDQN`: the online model picks the next action, the target model
    evaluates it.
    """

    def _next_value(self, next_obs: torch.Tensor) -> torch.Tensor:
        """The bootstrap value ``Q_target(s', argmax_a' Q(s', a'))``, shape ``[B]``."""
        best = self._q_values(self.model, next_obs).argmax(dim=1, keepdim=True)
        return self._q_values(self.target_model, next_obs).gather(1, best).squeeze(1)
