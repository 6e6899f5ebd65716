"""Numpy-facing agents, written once for paddle and torch: :class:`ContinuousAgent` (DDPG, TD3,
SAC, OAC, CQL, IQL) and :class:`A2CAgent`."""

from __future__ import annotations

from typing import Any

from parl.core.neutral import Agent

import numpy as np
from numpy.typing import ArrayLike

from parl_algos_ac.a2c import A2C
from parl_algos_ac.ddpg import DDPG
from parl_algos_ac.oac import OAC
from parl_algos_ac.sac import TanhGaussianActing

__all__ = ["A2CAgent", "ContinuousAgent"]


class ContinuousAgent(Agent):
    """Acts and learns for DDPG, TD3, SAC and OAC on one observation or a batch of them.

    ``predict`` gives the greedy action; ``sample`` explores: OAC samples its optimistic
    exploration policy, SAC its stochastic policy, DDPG and TD3 add Gaussian noise of standard
    deviation ``expl_noise`` to the greedy action (clipped to ``[-1, 1]``) from the agent's own
    generator, which checkpoints keep.

    Args:
        algorithm: a :class:`~parl_algos_ac.ddpg.DDPG`, ``TD3`` or ``SAC``.
        expl_noise: exploration noise of DDPG and TD3 (PARL's examples: 0.1).
        seed: seed of the exploration generator.
        device: torch: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``; None keeps the
            algorithm's.

    Examples:
        >>> from parl_algos_ac import ContinuousAgent, DDPG, DeterministicActorCritic
        >>> agent = ContinuousAgent(DDPG(DeterministicActorCritic(3, 1)), seed=0)
        >>> agent.sample(np.zeros((4, 3), np.float32)).shape
        (4, 1)
    """

    alg: DDPG
    checkpoint_state = ("rng",)
    # The torch twin's agent (before the family was written once) saved no generator.
    checkpoint_state_added = ("rng",)

    def __init__(
        self,
        algorithm: DDPG,
        *,
        expl_noise: float = 0.1,
        seed: int | None = None,
        device: Any = None,
    ) -> None:
        if not isinstance(algorithm, DDPG):
            raise TypeError(
                "ContinuousAgent needs a DDPG, TD3 or SAC algorithm, got "
                f"{type(algorithm).__name__}"
            )
        if not expl_noise >= 0:
            raise ValueError(f"expl_noise must be >= 0, got {expl_noise!r}")
        super().__init__(algorithm, device=device)
        self.expl_noise = float(expl_noise)
        self.rng = np.random.default_rng(seed)

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """The greedy action(s) in ``[-1, 1]``: ``[B, act_dim]``, or ``[act_dim]`` for one obs."""
        return self.to_numpy(self.alg.predict(self.to_tensor(obs)))

    def sample(self, obs: ArrayLike) -> np.ndarray:
        """Exploratory action(s), shaped as :meth:`predict`'s."""
        if isinstance(self.alg, OAC):
            return self.to_numpy(self.alg.get_optimistic_exploration_action(self.to_tensor(obs)))
        if isinstance(self.alg, TanhGaussianActing):
            return self.to_numpy(self.alg.sample(self.to_tensor(obs))[0])
        action = self.predict(obs)
        noise = self.rng.normal(0.0, self.expl_noise, size=action.shape)
        return np.clip(action + noise, -1.0, 1.0).astype(np.float32)

    def learn(
        self,
        obs: ArrayLike,
        action: ArrayLike,
        reward: ArrayLike,
        next_obs: ArrayLike,
        terminal: ArrayLike,
    ) -> Any:
        """One ``learn`` call of the algorithm on a numpy batch; returns its losses (tensors)."""
        return self.alg.learn(obs, action, reward, next_obs, terminal)


class A2CAgent(Agent):
    """Acts and learns for :class:`~parl_algos_ac.a2c.A2C` on batches of observations.

    Args:
        algorithm: an :class:`~parl_algos_ac.a2c.A2C`.
        device: torch: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``; None keeps the
            algorithm's.

    Examples:
        >>> from parl_algos_ac import A2C, A2CAgent, DiscreteActorCritic
        >>> agent = A2CAgent(A2C(DiscreteActorCritic(4, 2)))
        >>> actions, values = agent.sample(np.zeros((3, 4), np.float32))
        >>> actions.shape, values.shape
        ((3,), (3,))
    """

    alg: A2C

    def __init__(self, algorithm: A2C, *, device: Any = None) -> None:
        if not isinstance(algorithm, A2C):
            raise TypeError(f"A2CAgent needs an A2C algorithm, got {type(algorithm).__name__}")
        super().__init__(algorithm, device=device)

    def sample(self, obs: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Sampled actions and state values, one batched forward pass."""
        actions, values = self.alg.sample(self.to_tensor(obs))
        return self.to_numpy(actions), self.to_numpy(values)

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """Greedy actions: int64 ``[B]``, or a 0-d array for one observation."""
        return self.to_numpy(self.alg.predict(self.to_tensor(obs)))

    def value(self, obs: ArrayLike) -> np.ndarray:
        """State values ``[B]``."""
        return self.to_numpy(self.alg.value(self.to_tensor(obs)))

    def learn(
        self,
        obs: ArrayLike,
        actions: ArrayLike,
        advantages: ArrayLike,
        target_values: ArrayLike,
        learning_rate: float,
        entropy_coeff: float,
    ) -> tuple[float, float, float, float]:
        """One A2C step; returns ``(total_loss, pi_loss, vf_loss, entropy)`` as floats."""
        losses = self.alg.learn(
            obs, actions, advantages, target_values, learning_rate, entropy_coeff
        )
        total, pi, vf, entropy = self.to_numpy(self.ops.stack(list(losses))).tolist()
        return total, pi, vf, entropy
