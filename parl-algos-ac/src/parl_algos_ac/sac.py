"""Soft Actor-Critic (SAC) with a fixed or an automatically tuned temperature α."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from parl.core.batch import BatchLike, to_tensor
from parl.core.config import AlgorithmConfig
from parl.core.distributions import TanhGaussian
from parl.core.paddle import Model

import paddle

from parl_algos_ac.config import SACConfig
from parl_algos_ac.ddpg import DDPG, _minimize

__all__ = ["SAC", "SACConfig", "TanhGaussianActing"]


class TanhGaussianActing(DDPG):
    """DDPG's skeleton acting with a tanh-squashed Gaussian policy: the base of SAC, OAC, CQL
    and IQL. ``model.policy(obs)`` returns ``(mean, log_std)`` of the pre-squash Gaussian.
    """

    def _distribution(self, obs: paddle.Tensor) -> TanhGaussian:
        out = self._call(self.model.policy, obs)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(
                f"{type(self).__name__}: model.policy must return (mean, log_std), got "
                f"{type(out).__name__}"
            )
        return TanhGaussian.from_log_std(*out)

    def predict(self, obs: BatchLike) -> paddle.Tensor:
        """Return the greedy action ``tanh(mean)`` (no gradients); one obs or a batch."""
        with paddle.no_grad():
            return self._distribution(to_tensor(obs, "float32")).mode()

    def sample(self, obs: BatchLike) -> tuple[paddle.Tensor, paddle.Tensor]:
        """Return ``(action, log_prob)`` drawn from the policy (no gradients), as PARL's SAC."""
        with paddle.no_grad():
            action, log_prob = self._distribution(to_tensor(obs, "float32")).rsample_with_log_prob()
            return action, log_prob


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
    saved in checkpoints. :attr:`alpha_loss` holds the last α loss for logging.

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
        model: Model,
        gamma: float | None = None,
        tau: float | None = None,
        alpha: float | Literal["auto"] | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        *,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            model, gamma, tau, actor_lr, critic_lr, config=config, alpha=alpha, **options
        )
        cfg = self.config
        auto = self._learns_alpha()
        start = cfg.initial_alpha if auto else float(cfg.alpha)
        self.log_alpha = paddle.create_parameter(
            [], "float32", default_initializer=paddle.nn.initializer.Constant(math.log(start))
        )
        self.log_alpha.stop_gradient = not auto
        self.alpha_optimizer = (
            paddle.optimizer.Adam(
                learning_rate=cfg.alpha_lr or cfg.actor_lr, parameters=[self.log_alpha]
            )
            if auto
            else None
        )
        self.alpha_loss: paddle.Tensor | None = None

    def _learns_alpha(self) -> bool:
        """Whether α is learned (``alpha="auto"``) rather than fixed."""
        return self.config.alpha == "auto"

    @property
    def alpha(self) -> paddle.Tensor:
        """The current temperature ``exp(log_alpha)`` (a 0-d tensor, no gradient)."""
        return self.log_alpha.detach().exp()

    # -- learning -------------------------------------------------------------------------

    def learn(
        self,
        obs: BatchLike,
        action: BatchLike,
        reward: BatchLike,
        next_obs: BatchLike,
        terminal: BatchLike,
    ) -> tuple[paddle.Tensor, paddle.Tensor]:
        """A critic step, an actor step, an α step (``alpha="auto"``), a soft target update.

        Arguments as :meth:`DDPG.learn`.

        Returns:
            ``(critic_loss, actor_loss)`` as scalar tensors, as PARL's SAC.
        """
        obs, action, reward, next_obs, terminal = self._check_batch(
            obs, action, reward, next_obs, terminal
        )
        alpha = self.alpha
        # The actor's sample at obs (kept for its step); the one at next_obs builds no graph,
        # so the actor's backward runs over B rows, not over a joint pass's 2B.
        pi_action, pi_log_prob = self._distribution(obs).rsample_with_log_prob()
        with paddle.no_grad():
            next_action, next_log_prob = self._distribution(next_obs).rsample_with_log_prob()
            next_q = self._q(self.target_model, next_obs, next_action).min(axis=0)
            soft_next = next_q - alpha * next_log_prob
            target = reward + self.config.gamma * (1.0 - terminal) * soft_next
        critic_loss = self._learn_critic(obs, action, target)

        q_pi = self._q_for_actor(obs, pi_action).min(axis=0)
        actor_loss = _minimize(self.actor_optimizer, (alpha * pi_log_prob - q_pi).mean())
        if self.alpha_optimizer is not None:
            self._learn_alpha(pi_log_prob.detach(), action.shape[1])
        self.sync_target()
        return critic_loss, actor_loss

    def _learn_alpha(self, log_prob: paddle.Tensor, act_dim: int) -> None:
        assert self.alpha_optimizer is not None
        target_entropy = self.config.target_entropy
        if target_entropy is None:
            target_entropy = -float(act_dim)
        alpha_loss = -(self.log_alpha * (log_prob + target_entropy)).mean()
        self.alpha_loss = _minimize(self.alpha_optimizer, alpha_loss)
