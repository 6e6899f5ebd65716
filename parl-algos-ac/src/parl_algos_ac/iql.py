"""Implicit Q-Learning (IQL): offline RL without querying the critics at out-of-data actions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from parl.core.batch import BatchLike
from parl.core.config import AlgorithmConfig
from parl.core.paddle import Model

import paddle
from pydantic import Field, PositiveFloat

from parl_algos_ac.ddpg import DDPGConfig, _minimize
from parl_algos_ac.sac import TanhGaussianActing

__all__ = ["IQL", "IQLConfig", "advantage_weights", "expectile_loss"]


class IQLConfig(DDPGConfig):
    """Hyperparameters of :class:`IQL` (the paper's MuJoCo settings)."""

    actor_lr: PositiveFloat = 3e-4
    """Learning rate of the actor's Adam optimizer."""

    critic_lr: PositiveFloat = 3e-4
    """Learning rate of the Q-networks' Adam optimizer."""

    value_lr: PositiveFloat = 3e-4
    """Learning rate of the state-value network's Adam optimizer."""

    expectile: float = Field(default=0.7, gt=0.0, lt=1.0)
    """τ of the expectile regression of V on Q; towards 1, V approaches the in-data max of Q."""

    temperature: float = Field(default=3.0, ge=0.0)
    """β: the actor clones dataset actions weighted by ``exp(β·(Q - V))``; 0 weighs every
    action 1, which is behaviour cloning."""

    max_weight: PositiveFloat = 100.0
    """The advantage weights are clipped to this (exp overflows otherwise)."""


def expectile_loss(diff: paddle.Tensor, expectile: float) -> paddle.Tensor:
    """``mean(|τ - 1(u < 0)|·u²)`` with ``u = diff = Q(s, a) - V(s)`` (IQL's value loss, eq. 5)."""
    weight = paddle.where(
        diff < 0, paddle.full_like(diff, 1.0 - expectile), paddle.full_like(diff, expectile)
    )
    return (weight * diff.square()).mean()


def advantage_weights(
    advantage: paddle.Tensor, temperature: float, max_weight: float
) -> paddle.Tensor:
    """``min(exp(β·A), max_weight)``: the actor's per-sample weights (IQL eq. 7), no gradient."""
    return (temperature * advantage.detach()).exp().clip(max=max_weight)


class IQL(TanhGaussianActing):
    """Implicit Q-Learning, IQL (Kostrikov, Nair and Levine, ICLR 2022).

    Paper: "Offline Reinforcement Learning with Implicit Q-Learning", arXiv:2110.06169.

    Every loss uses dataset actions only; an upper expectile of Q over the data's actions
    stands in for the max over actions::

        value_loss  = mean(|τ - 1(u < 0)|·u²),  u = min_k Q_target_k(s, a) - V(s)
        actor_loss  = -mean(min(exp(β·u), max_weight)·log pi(a|s))   (advantage-weighted)
        critic_loss = sum_k mean((Q_k(s, a) - (r + gamma·(1 - terminal)·V(s')))²)

    then a soft target update of the Q-networks. The policy is SAC's tanh-squashed Gaussian;
    ``predict`` is ``tanh(mean)``.

    Model contract: SAC's (``policy``, ``value``, ``get_actor_params``, ``get_critic_params``)
    plus ``state_value(obs)`` → ``V(s)`` ``[B]`` and ``get_value_params()``
    (:class:`~parl_algos_ac.models.GaussianActorCriticValue`).

    Args:
        model: the model.
        gamma, tau, actor_lr, critic_lr: see :class:`IQLConfig`; None keeps the config's value.
        config: an :class:`IQLConfig` or a mapping of its fields.
        **options: further config fields (``expectile``, ``temperature``, ...).

    Examples:
        >>> from parl_algos_ac import IQL, GaussianActorCriticValue
        >>> alg = IQL(GaussianActorCriticValue(3, 1), expectile=0.7, temperature=3.0)
    """

    Config: ClassVar[type[AlgorithmConfig]] = IQLConfig
    config: IQLConfig
    required_model_methods: ClassVar[tuple[str, ...]] = (
        "policy",
        "value",
        "state_value",
        "get_actor_params",
        "get_critic_params",
        "get_value_params",
    )

    def __init__(
        self,
        model: Model,
        gamma: float | None = None,
        tau: float | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        *,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, config=config, **options)
        self.value_optimizer = paddle.optimizer.Adam(
            learning_rate=self.config.value_lr,
            parameters=list(model.get_value_params()),
            use_multi_tensor=True,
        )

    def learn(  # type: ignore[override]  # three losses
        self,
        obs: BatchLike,
        action: BatchLike,
        reward: BatchLike,
        next_obs: BatchLike,
        terminal: BatchLike,
    ) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """A value step, an actor step, a critic step and a soft target update.

        Arguments as :meth:`DDPG.learn`.

        Returns:
            ``(critic_loss, value_loss, actor_loss)`` as scalar tensors.
        """
        obs, action, reward, next_obs, terminal = self._check_batch(
            obs, action, reward, next_obs, terminal
        )
        cfg = self.config
        with paddle.no_grad():
            target_q = self._q(self.target_model, obs, action).min(axis=0)
        value = self._state_value(obs)
        advantage = target_q - value
        value_loss = _minimize(self.value_optimizer, expectile_loss(advantage, cfg.expectile))

        weights = advantage_weights(advantage, cfg.temperature, cfg.max_weight)
        log_prob = self._distribution(obs).log_prob(action)
        actor_loss = _minimize(self.actor_optimizer, -(weights * log_prob).mean())

        with paddle.no_grad():
            target = reward + cfg.gamma * (1.0 - terminal) * self._state_value(next_obs)
        critic_loss = self._learn_critic(obs, action, target)
        self.sync_target()
        return critic_loss, value_loss, actor_loss

    def _state_value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """``V(s)`` as ``[B]``."""
        value = self._call(self.model.state_value, obs)
        return value.reshape([obs.shape[0]])
