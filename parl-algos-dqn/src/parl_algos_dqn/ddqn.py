"""Double DQN (DDQN): DQN with the greedy next action chosen by the online network."""

from __future__ import annotations

from parl.core.ops import Tensor

from parl_algos_dqn.dqn import DQN, DQNConfig

__all__ = ["DDQN", "DQNConfig"]


class DDQN(DQN):
    """Double Deep Q-Network, DDQN (van Hasselt, Guez and Silver, AAAI 2016).

    Paper: "Deep Reinforcement Learning with Double Q-learning".

    Identical to :class:`~parl_algos_dqn.dqn.DQN` except for the bootstrap value: the online
    model picks the next action and the target model evaluates it,
    ``r + gamma * (1 - terminal) * Q_target(s', argmax_a' Q(s', a'))``, which removes the
    upward bias of DQN's ``max``. Constructor, config (:class:`DQNConfig`) and methods are
    DQN's; ``terminal`` likewise marks terminated, not truncated, transitions.

    Examples:
        >>> from parl_algos_dqn import DDQN, QNetwork
        >>> alg = DDQN(QNetwork(obs_dim=4, act_dim=2), gamma=0.99, lr=1e-3)
    """

    def _next_value(self, next_obs: Tensor) -> Tensor:
        """The bootstrap value ``Q_target(s', argmax_a' Q(s', a'))``, shape ``[B]``."""
        best = self.ops.argmax(self._q_values(self.model, next_obs), axis=1)
        return self.ops.take_along(self._q_values(self.target_model, next_obs), best)
