"""Soft Actor-Critic (SAC) with a fixed or an automatically tuned temperature α, written once for
paddle and torch."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from parl.core.config import AlgorithmConfig
from parl.core.distributions import TanhGaussian
from parl.core.ops import Tensor

from pydantic import Field, PositiveFloat

from parl_algos_ac.ddpg import DDPG, DDPGConfig

__all__ = ["SAC", "SACConfig", "TanhGaussianActing"]


class SACConfig(DDPGConfig):
    """Hyperparameters of :class:`SAC`: PARL's, plus automatic entropy tuning."""

    actor_lr: float = Field(default=3e-4, gt=0.0)
    """Learning rate of the actor's Adam optimizer."""

    critic_lr: float = Field(default=3e-4, gt=0.0)
    """Learning rate of the critics' Adam optimizer."""

    alpha: PositiveFloat | Literal["auto"] = 0.2
    """Entropy temperature α; ``"auto"`` learns it so that the policy's entropy tracks
    ``target_entropy`` (PARL 2.x had only a fixed α)."""

    initial_alpha: PositiveFloat = 1.0
    """The starting α with ``alpha="auto"``."""

    alpha_lr: PositiveFloat | None = None
    """Learning rate of α's Adam optimizer with ``alpha="auto"``; None uses ``actor_lr``."""

    target_entropy: float | None = None
    """The entropy α is tuned towards; None means ``-act_dim`` (Haarnoja et al.'s heuristic)."""


class TanhGaussianActing(DDPG):
    """DDPG's skeleton acting with a tanh-squashed Gaussian policy: the base of SAC, OAC, CQL
    and IQL. ``model.policy(obs)`` returns ``(mean, log_std)`` of the pre-squash Gaussian.
    """

    def _distribution(self, obs: Tensor) -> TanhGaussian:
        out = self._call(self.model.policy, obs)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(
                f"{type(self).__name__}: model.policy must return (mean, log_std), got "
                f"{type(out).__name__}"
            )
        return TanhGaussian.from_log_std(*out)

    def predict(self, obs: Any) -> Tensor:
        """Return the greedy action ``tanh(mean)`` (no gradients); one obs or a batch."""
        with self.ops.no_grad():
            return self._distribution(self._obs(obs)).mode()

    def sample(self, obs: Any) -> tuple[Tensor, Tensor]:
        """Return ``(action, log_prob)`` drawn from the policy (no gradients), as PARL's SAC."""
        with self.ops.no_grad():
            return self._distribution(self._obs(obs)).rsample_with_log_prob()


class SAC(TanhGaussianActing):
    """Soft Actor-Critic, SAC (Haarnoja, Zhou, Abbeel and Levine, ICML 2018), with automatic
    entropy tuning (Haarnoja et al., "Soft Actor-Critic Algorithms and Applications", 2018).

    Paper: "Soft Actor-Critic: Off-Policy Maximum Entropy Deep Reinforcement Learning with a
    Stochastic Actor", arXiv:1801.01290.

    The policy is a tanh-squashed Gaussian (:class:`~parl.core.distributions.TanhGaussian`),
    sampled with the reparameterisation trick. With ``a' ~ pi(s')``::

        y           = r + gamma·(1 - terminal)·(min_k Q_target_k(s', a') - alpha·log pi(a'|s'))
        critic_loss = sum_k mean((Q_k(s, a) - y)²)
        actor_loss  = mean(alpha·log pi(a~|s) - min_k Q_k(s, a~)),   a~ ~ pi(s) (rsample)
        alpha_loss  = -mean(log_alpha · (log pi(a~|s) + target_entropy))   (alpha="auto")

    The policy's sample at ``s'`` is drawn without a graph (only the sample at ``s`` is
    differentiated), the actor loss's critic pass computes no critic weight gradients, and all
    critics run in one batched pass when the model stacks them
    (:class:`~parl_algos_ac.models.GaussianActorCritic`). α is read from ``log_alpha`` before
    the step; ``log_alpha`` (a learnable scalar with ``alpha="auto"``) and its optimizer are
    saved in checkpoints. :attr:`alpha_loss` holds the last α loss for logging. It runs on the
    framework of its model (paddle or torch); on torch ``log_alpha`` lives on the model's device.

    Model contract: ``policy(obs)`` → ``(mean, log_std)`` of the pre-squash Gaussian;
    ``value(obs, act)`` → the critics' Q values (``(Q1, Q2)`` or ``[2, B]``);
    ``get_actor_params()``, ``get_critic_params()``.

    Examples:
        >>> from parl_algos_ac import SAC, GaussianActorCritic
        >>> alg = SAC(GaussianActorCritic(3, 1), alpha="auto")
        >>> round(float(alg.alpha), 3)
        1.0
    """

    Config: ClassVar[type[AlgorithmConfig]] = SACConfig
    config: SACConfig
    checkpoint_state: ClassVar[tuple[str, ...]] = ("log_alpha",)

    def __init__(
        self,
        model: Any,
        gamma: float | None = None,
        tau: float | None = None,
        alpha: float | Literal["auto"] | None = None,
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
            actor_lr,
            critic_lr,
            config=config,
            device=device,
            alpha=alpha,
            **options,
        )
        cfg = self.config
        auto = self._learns_alpha()
        start = cfg.initial_alpha if auto else float(cfg.alpha)
        self.log_alpha = self.ops.scalar_parameter(math.log(start), self.device, trainable=auto)
        lr = cfg.alpha_lr or cfg.actor_lr
        self.alpha_optimizer = self.ops.adam([self.log_alpha], lr=lr) if auto else None
        self.alpha_loss: Tensor | None = None

    def _learns_alpha(self) -> bool:
        """Whether α is learned (``alpha="auto"``) rather than fixed."""
        return self.config.alpha == "auto"

    @property
    def alpha(self) -> Tensor:
        """The current temperature ``exp(log_alpha)`` (a 0-d tensor, no gradient)."""
        return self.log_alpha.detach().exp()

    # -- learning -------------------------------------------------------------------------

    def learn(
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any
    ) -> tuple[Tensor, Tensor]:
        """A critic step, an actor step, an α step (``alpha="auto"``), a soft target update.

        Arguments as :meth:`DDPG.learn`.

        Returns:
            ``(critic_loss, actor_loss)`` as scalar tensors, as PARL's SAC.
        """
        ops, batch = self.ops, self._transitions(obs, action, reward, next_obs, terminal)
        alpha = self.alpha
        # The actor's sample at obs (kept for its step); the one at next_obs builds no graph,
        # so the actor's backward runs over B rows, not over a joint pass's 2B.
        pi_action, pi_log_prob = self._distribution(batch.obs).rsample_with_log_prob()
        with ops.no_grad():
            next_policy = self._distribution(batch.next_obs)
            next_action, next_log_prob = next_policy.rsample_with_log_prob()
            next_q = ops.min(self._q(self.target_model, batch.next_obs, next_action), axis=0)
            soft_next = next_q - alpha * next_log_prob
            target = batch.reward + self.config.gamma * (1.0 - batch.terminal) * soft_next
        critic_loss = self._learn_critic(batch.obs, batch.action, target)

        q_pi = ops.min(self._q_for_actor(batch.obs, pi_action), axis=0)
        actor_loss = self._minimize(self.actor_optimizer, ops.mean(alpha * pi_log_prob - q_pi))
        if self.alpha_optimizer is not None:
            self._learn_alpha(pi_log_prob.detach(), batch.action.shape[1])
        self.sync_target()
        return critic_loss, actor_loss

    def _learn_alpha(self, log_prob: Tensor, act_dim: int) -> None:
        assert self.alpha_optimizer is not None
        target_entropy = self.config.target_entropy
        if target_entropy is None:
            target_entropy = -float(act_dim)
        alpha_loss = -self.ops.mean(self.log_alpha * (log_prob + target_entropy))
        self.alpha_loss = self._minimize(self.alpha_optimizer, alpha_loss)
