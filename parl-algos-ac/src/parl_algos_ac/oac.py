"""Optimistic Actor-Critic (OAC): SAC that explores towards an upper bound of Q, written once for
paddle and torch."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from parl.core.config import AlgorithmConfig
from parl.core.distributions import DiagGaussian
from parl.core.ops import Tensor

from pydantic import Field

from parl_algos_ac.sac import SAC, SACConfig

__all__ = ["OAC", "OACConfig"]

# Keeps the shift finite where the upper bound is flat (a zero gradient): then there is no
# direction to be optimistic in, and the shift is zero.
_NORM_EPS = 1e-6


class OACConfig(SACConfig):
    """Hyperparameters of :class:`OAC`: SAC's, plus the optimism ``beta`` and the shift ``delta``.

    The defaults of ``beta`` and ``delta`` are the paper's (its Humanoid tuning), which PARL's
    OAC example uses too.
    """

    beta: float = Field(default=4.66, ge=0.0)
    """β_UB: how many critic standard deviations the upper bound ``Q_UB`` adds to their mean."""

    delta: float = Field(default=23.53, ge=0.0)
    """δ: the KL budget between the exploration policy and the target policy."""


class OAC(SAC):
    """Optimistic Actor-Critic, OAC (Ciosek, Vuong, Loftin and Hofmann, NeurIPS 2019).

    Paper: "Better Exploration with Optimistic Actor-Critic", arXiv:1910.12807.

    Learning is SAC's (:meth:`SAC.learn`); only exploration differs. With the target policy's
    pre-``tanh`` Gaussian ``N(mu_T, Sigma_T)`` and the critics' mean and spread at
    ``a = tanh(mu_T)``::

        Q_UB(s, a) = mean_k Q_k + beta·mean_k |Q_k - mean_k Q_k|   (two critics: |Q1 - Q2| / 2)
        g          = d Q_UB / d mu_T
        mu_E       = mu_T + sqrt(2·delta)·Sigma_T·g / sqrt(gᵀ·Sigma_T·g)
        a_explore  = tanh(x),  x ~ N(mu_E, Sigma_T)

    ``mu_E`` is the closed-form maximiser of the linearised ``Q_UB`` over Gaussians with the
    target policy's covariance and ``KL(N(mu_E, Sigma_T) || N(mu_T, Sigma_T)) <= delta``.
    :class:`~parl_algos_ac.agent.ContinuousAgent` explores with
    :meth:`get_optimistic_exploration_action`.

    Model contract: SAC's.

    Args:
        model: the actor-critic model (e.g. :class:`~parl_algos_ac.models.GaussianActorCritic`).
        gamma, tau, alpha, beta, delta, actor_lr, critic_lr: see :class:`OACConfig` (PARL 2.x's
            order); None keeps the config's value.
        config: an :class:`OACConfig` or a mapping of its fields.
        **options: further config fields.

    Examples:
        >>> import numpy as np
        >>> from parl_algos_ac import OAC, GaussianActorCritic
        >>> alg = OAC(GaussianActorCritic(3, 1), beta=4.66, delta=23.53)
        >>> list(alg.get_optimistic_exploration_action(np.zeros((2, 3), np.float32)).shape)
        [2, 1]
    """

    Config = OACConfig
    config: OACConfig

    def __init__(
        self,
        model: Any,
        gamma: float | None = None,
        tau: float | None = None,
        alpha: float | Literal["auto"] | None = None,
        beta: float | None = None,
        delta: float | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        *,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        device: Any = None,
        **options: Any,
    ) -> None:
        super().__init__(
            model,
            gamma,
            tau,
            alpha,
            actor_lr,
            critic_lr,
            config=config,
            device=device,
            beta=beta,
            delta=delta,
            **options,
        )

    def optimistic_distribution(self, obs: Any) -> tuple[Tensor, Tensor]:
        """The exploration policy's pre-``tanh`` mean ``mu_E`` and standard deviation.

        Args:
            obs: a batch ``[B, obs_dim]`` or one observation ``[obs_dim]``.

        Returns:
            ``(mu_E, std)``, each shaped like the policy's mean; no gradients.
        """
        ops, obs = self.ops, self._obs(obs)
        single = obs.ndim == 1
        if single:
            obs = obs.unsqueeze(0)
        with ops.no_grad():
            target_policy = self._distribution(obs).base
        std = target_policy.std
        pre_tanh_mean = ops.grad_leaf(target_policy.mean)
        q = self._q_for_actor(obs, pre_tanh_mean.tanh())
        mean_q = ops.mean(q, axis=0)
        # The critics' mean absolute deviation: |Q1 - Q2| / 2 for two, with a finite gradient
        # where they agree (a square root's would be infinite there).
        spread = ops.mean((q - mean_q).abs(), axis=0)
        upper_bound = mean_q + self.config.beta * spread
        grad = ops.grad(ops.sum(upper_bound), pre_tanh_mean)
        variance = std.square()
        norm = ops.sum(grad.square() * variance, axis=-1, keepdim=True).sqrt()
        shift = math.sqrt(2.0 * self.config.delta) * variance * grad / (norm + _NORM_EPS)
        mu_e = (pre_tanh_mean + shift).detach()
        if single:
            return mu_e[0], std[0]
        return mu_e, std

    def get_optimistic_exploration_action(self, obs: Any) -> Tensor:
        """An exploratory action ``tanh(x)``, ``x ~ N(mu_E, Sigma_T)`` (PARL 2.x's name).

        Args:
            obs: a batch ``[B, obs_dim]`` or one observation ``[obs_dim]``.

        Returns:
            Actions in ``(-1, 1)``, ``[B, act_dim]`` or ``[act_dim]``.
        """
        mu_e, std = self.optimistic_distribution(obs)
        with self.ops.no_grad():
            return DiagGaussian(mu_e, std).sample().tanh()
