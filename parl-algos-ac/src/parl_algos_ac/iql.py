"""Implicit Q-Learning (IQL): offline RL without querying the critics at out-of-data actions,
written once for paddle and torch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from parl.core.config import AlgorithmConfig
from parl.core.ops import Tensor, ops_of_tensor

from pydantic import Field, PositiveFloat

from parl_algos_ac.ddpg import DDPGConfig
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


def expectile_loss(diff: Tensor, expectile: float) -> Tensor:
    """``mean(|τ - 1(u < 0)|·u²)`` with ``u = diff = Q(s, a) - V(s)`` (IQL's value loss, eq. 5),
    written as ``τ·max(u, 0)² + (1 - τ)·min(u, 0)²``."""
    ops = ops_of_tensor(diff)
    above, below = ops.clip(diff, low=0.0).square(), ops.clip(diff, high=0.0).square()
    return ops.mean(expectile * above + (1.0 - expectile) * below)


def advantage_weights(advantage: Tensor, temperature: float, max_weight: float) -> Tensor:
    """``min(exp(β·A), max_weight)``: the actor's per-sample weights (IQL eq. 7), no gradient."""
    ops = ops_of_tensor(advantage)
    return ops.clip((temperature * advantage.detach()).exp(), high=max_weight)


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
        model: Any,
        gamma: float | None = None,
        tau: float | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        *,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        device: Any = None,
        **options: Any,
    ) -> None:
        super().__init__(
            model, gamma, tau, actor_lr, critic_lr, config=config, device=device, **options
        )
        value_params = list(model.get_value_params())
        self.value_optimizer = self.ops.adam(value_params, lr=self.config.value_lr)

    def learn(  # type: ignore[override]  # three losses
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any
    ) -> tuple[Tensor, Tensor, Tensor]:
        """A value step, an actor step, a critic step and a soft target update.

        Arguments as :meth:`DDPG.learn`.

        Returns:
            ``(critic_loss, value_loss, actor_loss)`` as scalar tensors.
        """
        ops, cfg = self.ops, self.config
        batch = self._transitions(obs, action, reward, next_obs, terminal)
        with ops.no_grad():
            target_q = ops.min(self._q(self.target_model, batch.obs, batch.action), axis=0)
        advantage = target_q - self._state_value(batch.obs)
        value_loss = self._minimize(self.value_optimizer, expectile_loss(advantage, cfg.expectile))

        weights = advantage_weights(advantage, cfg.temperature, cfg.max_weight)
        log_prob = self._distribution(batch.obs).log_prob(batch.action)
        actor_loss = self._minimize(self.actor_optimizer, -ops.mean(weights * log_prob))

        with ops.no_grad():
            next_value = self._state_value(batch.next_obs)
            target = batch.reward + cfg.gamma * (1.0 - batch.terminal) * next_value
        critic_loss = self._learn_critic(batch.obs, batch.action, target)
        self.sync_target()
        return critic_loss, value_loss, actor_loss

    def _state_value(self, obs: Tensor) -> Tensor:
        """``V(s)`` as ``[B]``."""
        value = self._call(self.model.state_value, obs)
        return value.reshape([obs.shape[0]])
