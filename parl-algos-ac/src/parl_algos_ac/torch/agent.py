"""The numpy-facing agent of SAC on torch (the paddle ``ContinuousAgent``'s SAC path)."""

from __future__ import annotations

from typing import Any

from parl.core.torch import Agent

import numpy as np
import torch
from numpy.typing import ArrayLike

from parl_algos_ac.torch.sac import SAC

__all__ = ["ContinuousAgent"]


class ContinuousAgent(Agent):
    """Acts and learns for a torch :class:`SAC` on one observation or a batch of them.

    As the paddle :class:`parl_algos_ac.agent.ContinuousAgent` does for SAC: ``predict`` gives
    the greedy action ``tanh(mean)``, ``sample`` draws from the stochastic policy (torch's
    generator, seeded by ``parl.set_seed``), ``learn`` is one ``SAC.learn``. SAC is the only
    actor-critic algorithm on torch so far, so that is all this agent takes.

    Args:
        algorithm: a torch :class:`SAC`.
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``; ``None`` keeps the algorithm's.

    Examples:
        >>> from parl_algos_ac.torch import SAC, GaussianActorCritic
        >>> agent = ContinuousAgent(SAC(GaussianActorCritic(3, 1)))
        >>> agent.sample(np.zeros((4, 3), np.float32)).shape
        (4, 1)
    """

    alg: SAC

    def __init__(self, algorithm: SAC, *, device: str | torch.device | None = None) -> None:
        if not isinstance(algorithm, SAC):
            raise TypeError(
                "the torch ContinuousAgent needs a torch SAC algorithm (the only actor-critic "
                f"algorithm on torch so far), got {type(algorithm).__name__}; DDPG, TD3 and "
                "the others run on paddle (parl_algos_ac.ContinuousAgent)"
            )
        super().__init__(algorithm, device=device)

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """The greedy action(s) in ``[-1, 1]``: ``[B, act_dim]``, or ``[act_dim]`` for one obs."""
        return self.to_numpy(self.alg.predict(self.to_tensor(obs)))

    def sample(self, obs: ArrayLike) -> np.ndarray:
        """Action(s) drawn from the policy, shaped as :meth:`predict`'s."""
        return self.to_numpy(self.alg.sample(self.to_tensor(obs))[0])

    def learn(
        self,
        obs: ArrayLike,
        action: ArrayLike,
        reward: ArrayLike,
        next_obs: ArrayLike,
        terminal: ArrayLike,
    ) -> Any:
        """One ``SAC.learn`` on a numpy batch; returns ``(critic_loss, actor_loss)`` tensors."""
        return self.alg.learn(obs, action, reward, next_obs, terminal)
