"""Conservative Q-Learning (CQL): SAC for offline data, with a penalty on out-of-data Q values,
written once for paddle and torch."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from parl.core.config import AlgorithmConfig
from parl.core.ops import Tensor, ops_of_tensor
from parl.core.transitions import Transitions

from pydantic import NonNegativeInt, PositiveFloat, PositiveInt

from parl_algos_ac.sac import SAC, SACConfig

__all__ = ["CQL", "CQLConfig", "cql_penalty"]

# PARL's CQL clips the learned α' (the Lagrange variant) to this range.
_ALPHA_PRIME_MAX = 1e6


class CQLConfig(SACConfig):
    """Hyperparameters of :class:`CQL` (PARL 2.x's names and defaults)."""

    actor_lr: PositiveFloat = 1e-4
    """Learning rate of the actor's Adam optimizer (PARL's CQL example: 1e-4)."""

    alpha: PositiveFloat | Literal["auto"] = 1.0
    """Entropy temperature α when ``with_automatic_entropy_tuning`` is off."""

    policy_eval_start: NonNegativeInt = 40_000
    """``learn`` calls whose actor step is behaviour cloning (``α·log π(ã|s) - log π(a|s)``)."""

    with_automatic_entropy_tuning: bool = True
    """Learn α towards ``target_entropy`` (from ``initial_alpha``), as SAC's ``alpha="auto"``."""

    with_lagrange: bool = False
    """Learn the penalty's weight α' so that the penalty tracks ``lagrange_thresh``."""

    lagrange_thresh: float = 10.0
    """The target action gap τ of the Lagrange variant."""

    min_q_version: Literal[2, 3] = 3
    """3: CQL(H) with importance-sampled log-sum-exp; 2: the plain log-sum-exp, as the CQL
    authors' code (with the next state's policy actions, which PARL 2.x's leaves out; PARL also
    forces 2 under ``with_lagrange``, which this keeps apart)."""

    min_q_weight: PositiveFloat = 5.0
    """The weight of the conservative penalty."""

    num_random: PositiveInt = 10
    """Actions per state, for each of the random, current-policy and next-policy sets."""

    temperature: PositiveFloat = 1.0
    """The log-sum-exp's temperature."""


def cql_penalty(
    q_random: Tensor,
    q_current: Tensor,
    log_prob_current: Tensor,
    q_next: Tensor,
    log_prob_next: Tensor,
    q_data: Tensor,
    *,
    act_dim: int,
    min_q_version: int = 3,
    temperature: float = 1.0,
    min_q_weight: float = 5.0,
) -> Tensor:
    """CQL's conservative penalty for each critic (Kumar et al. 2020, eq. 4 and appendix F).

    ``min_q_weight·(T·mean_s logsumexp_a(Q(s, a)/T) - mean_s Q(s, a_data))``, the log-sum-exp
    over ``N`` uniform actions, ``N`` from the policy at ``s`` and ``N`` from the policy at
    ``s'`` (all evaluated at ``s``). Version 3 divides each sample by its proposal density
    (subtracts ``log(0.5^act_dim)`` for the uniform ones and ``log π`` for the policy's);
    version 2 adds the data action and uses no densities.

    Args:
        q_random, q_current, q_next: ``[K, B, N]`` Q values of the K critics.
        log_prob_current, log_prob_next: ``[B, N]`` log-densities of the policy's actions.
        q_data: ``[K, B]`` Q values of the dataset's actions.
        act_dim: the action size (the uniform density is ``0.5^act_dim`` on ``[-1, 1]``).
        min_q_version, temperature, min_q_weight: see :class:`CQLConfig`.

    Returns:
        ``[K]``: the penalty of each critic.
    """
    if min_q_version == 3:
        uniform_log_density = act_dim * math.log(0.5)
        parts = [
            q_random - uniform_log_density,
            q_next - log_prob_next.unsqueeze(0),
            q_current - log_prob_current.unsqueeze(0),
        ]
    else:
        parts = [q_random, q_data.unsqueeze(-1), q_next, q_current]
    ops = ops_of_tensor(q_data)
    stacked = ops.concat(parts, axis=-1) / temperature
    soft_max = ops.mean(ops.logsumexp(stacked, axis=-1), axis=-1) * temperature
    return min_q_weight * (soft_max - ops.mean(q_data, axis=-1))


class CQL(SAC):
    """Conservative Q-Learning, CQL (Kumar, Zhou, Tucker and Levine, NeurIPS 2020), on SAC.

    Paper: "Conservative Q-Learning for Offline Reinforcement Learning", arXiv:2006.04779.

    SAC trained from a fixed dataset, with the critics pushed down on actions the data does
    not hold (:func:`cql_penalty`) and, with ``with_lagrange``, the penalty's weight learned::

        y           = r + gamma·(1 - terminal)·min_k Q_target_k(s', a'),  a' ~ pi(s')  (no entropy)
        mse         = sum_k mean((Q_k(s, a) - y)²)
        penalty_k   = cql_penalty(...)_k                     (with_lagrange: α'·(penalty_k - τ))
        critic_loss = mse + sum_k penalty_k
        alpha'_loss = -α'·mean_k(penalty_k - τ)               (with_lagrange)
        actor_loss  = mean(α·log pi(ã|s) - min_k Q_k(s, ã))  (the first ``policy_eval_start``
                      calls: mean(α·log pi(ã|s) - log pi(a|s)), behaviour cloning)

    α is learned as SAC's ``alpha="auto"`` when ``with_automatic_entropy_tuning`` (the default).
    The learn-call counter, α and α' are saved in checkpoints.

    Model contract: SAC's.

    Args:
        model: the actor-critic model (e.g. :class:`~parl_algos_ac.models.GaussianActorCritic`).
        gamma, tau, actor_lr, critic_lr, policy_eval_start: see :class:`CQLConfig`; then, in
            PARL 2.x's order, ``with_automatic_entropy_tuning``, ``with_lagrange``,
            ``lagrange_thresh``, ``min_q_version``, ``min_q_weight``, ``alpha``. None keeps the
            config's value.
        config: a :class:`CQLConfig` or a mapping of its fields.
        **options: further config fields.

    Examples:
        >>> from parl_algos_ac import CQL, GaussianActorCritic
        >>> alg = CQL(GaussianActorCritic(3, 1), with_lagrange=True, lagrange_thresh=5.0)
        >>> float(alg.alpha_prime)
        1.0
    """

    Config: ClassVar[type[AlgorithmConfig]] = CQLConfig
    config: CQLConfig
    checkpoint_state: ClassVar[tuple[str, ...]] = ("log_alpha", "log_alpha_prime", "learn_steps")

    def __init__(
        self,
        model: Any,
        gamma: float | None = None,
        tau: float | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        policy_eval_start: int | None = None,
        with_automatic_entropy_tuning: bool | None = None,
        with_lagrange: bool | None = None,
        lagrange_thresh: float | None = None,
        min_q_version: int | None = None,
        min_q_weight: float | None = None,
        alpha: float | None = None,
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
            policy_eval_start=policy_eval_start,
            with_automatic_entropy_tuning=with_automatic_entropy_tuning,
            with_lagrange=with_lagrange,
            lagrange_thresh=lagrange_thresh,
            min_q_version=min_q_version,
            min_q_weight=min_q_weight,
            **options,
        )
        self.learn_steps = 0
        self.penalty: Tensor | None = None
        lagrange = self.config.with_lagrange
        self.log_alpha_prime = self.ops.scalar_parameter(0.0, self.device, trainable=lagrange)
        self.alpha_prime_optimizer = (
            self.ops.adam([self.log_alpha_prime], lr=self.config.critic_lr) if lagrange else None
        )

    def _learns_alpha(self) -> bool:
        return self.config.with_automatic_entropy_tuning or self.config.alpha == "auto"

    @property
    def alpha_prime(self) -> Tensor:
        """The penalty's learned weight ``clip(exp(log_alpha_prime), 0, 1e6)`` (no gradient)."""
        return self.ops.clip(self.log_alpha_prime.detach().exp(), 0.0, _ALPHA_PRIME_MAX)

    def learn(  # type: ignore[override]  # PARL's CQL returns four values
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """A critic step with the conservative penalty, an actor step, an α (and α') step and a
        soft target update, on a batch of the dataset.

        Arguments as :meth:`DDPG.learn`.

        Returns:
            ``(critic_loss, mse, actor_loss, min_q)`` as scalar tensors (PARL 2.x's CQL):
            the whole critic loss, its TD part, the actor's loss and
            ``mean min_k Q_k(s, ã)`` at the policy's actions. The last penalty (summed over
            critics) is kept in :attr:`penalty` for logging.
        """
        ops, batch = self.ops, self._transitions(obs, action, reward, next_obs, terminal)
        alpha = self.alpha
        with ops.no_grad():
            next_action, _ = self._distribution(batch.next_obs).rsample_with_log_prob()
            next_q = ops.min(self._q(self.target_model, batch.next_obs, next_action), axis=0)
            target = batch.reward + self.config.gamma * (1.0 - batch.terminal) * next_q
        critic_loss, mse = self._learn_conservative_critic(batch, target)

        policy = self._distribution(batch.obs)
        pi_action, pi_log_prob = policy.rsample_with_log_prob()
        q_pi = ops.min(self._q_for_actor(batch.obs, pi_action), axis=0)
        cloning = self.learn_steps < self.config.policy_eval_start
        fit = policy.log_prob(batch.action) if cloning else q_pi
        actor_loss = self._minimize(self.actor_optimizer, ops.mean(alpha * pi_log_prob - fit))
        if self.alpha_optimizer is not None:
            self._learn_alpha(pi_log_prob.detach(), batch.action.shape[1])
        self.sync_target()
        self.learn_steps += 1
        return critic_loss, mse, actor_loss, ops.mean(q_pi).detach()

    def _learn_conservative_critic(
        self, batch: Transitions, target: Tensor
    ) -> tuple[Tensor, Tensor]:
        """One critic step on TD error plus penalty; returns (loss, mse), detached, and keeps
        the summed penalty in :attr:`penalty`."""
        ops, cfg = self.ops, self.config
        obs, action = batch.obs, batch.action
        size, act_dim, n = obs.shape[0], action.shape[1], cfg.num_random
        repeated_obs = obs.repeat_interleave(n, 0)
        with ops.no_grad():
            random_action = ops.uniform_like(action.repeat_interleave(n, 0), -1.0, 1.0)
            current, log_prob_current = self._distribution(repeated_obs).rsample_with_log_prob()
            repeated_next = batch.next_obs.repeat_interleave(n, 0)
            upcoming, log_prob_next = self._distribution(repeated_next).rsample_with_log_prob()
        # One pass of every critic over the data actions and the 3·N sampled actions per state.
        all_obs = ops.concat([obs, repeated_obs, repeated_obs, repeated_obs])
        all_actions = ops.concat([action, random_action, current, upcoming])
        q = self._q(self.model, all_obs, all_actions)
        q_data = q[:, :size]
        sampled = q[:, size:].reshape([q.shape[0], 3, size, n])
        q_random, q_current, q_next = sampled[:, 0], sampled[:, 1], sampled[:, 2]
        mse = ops.sum(ops.mean((q_data - target).square(), axis=1))
        penalty = cql_penalty(
            q_random,
            q_current,
            log_prob_current.reshape([size, n]),
            q_next,
            log_prob_next.reshape([size, n]),
            q_data,
            act_dim=act_dim,
            min_q_version=cfg.min_q_version,
            temperature=cfg.temperature,
            min_q_weight=cfg.min_q_weight,
        )
        gap = penalty - cfg.lagrange_thresh
        if self.alpha_prime_optimizer is not None:
            penalty = self.alpha_prime.detach() * gap
        total_penalty = ops.sum(penalty)
        loss = self._minimize(self.critic_optimizer, mse + total_penalty)
        if self.alpha_prime_optimizer is not None:
            # After the critic's step, from a fresh forward pass: the two backward passes then
            # share no graph, which a captured update (compile=True) needs. log_alpha_prime is
            # unchanged by the critic's step, so α' is the value the penalty above used.
            alpha_prime = ops.clip(self.log_alpha_prime.exp(), 0.0, _ALPHA_PRIME_MAX)
            self._minimize(self.alpha_prime_optimizer, -ops.mean(alpha_prime * gap.detach()))
        self.penalty = total_penalty.detach()
        return loss, mse.detach()
