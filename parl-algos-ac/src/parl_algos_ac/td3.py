"""Twin Delayed DDPG (TD3) and its hyperparameters, written once for paddle and torch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parl.core.config import AlgorithmConfig
from parl.core.ops import Tensor
from parl.core.transitions import Transitions

from pydantic import Field, NonNegativeFloat, PositiveInt

from parl_algos_ac.ddpg import DDPG, DDPGConfig

__all__ = ["TD3", "TD3Config"]


class TD3Config(DDPGConfig):
    """Hyperparameters of :class:`TD3`: DDPG's and PARL's three of TD3."""

    actor_lr: float = Field(default=3e-4, gt=0.0)
    """Learning rate of the actor's Adam optimizer."""

    critic_lr: float = Field(default=3e-4, gt=0.0)
    """Learning rate of the critics' Adam optimizer."""

    policy_noise: NonNegativeFloat = 0.2
    """Standard deviation of the Gaussian noise added to the target action (smoothing)."""

    noise_clip: NonNegativeFloat = 0.5
    """The smoothing noise is clipped to ``[-noise_clip, noise_clip]``."""

    policy_freq: PositiveInt = 2
    """Critic steps per actor step and target update (the "delayed" in TD3)."""


class TD3(DDPG):
    """Twin Delayed Deep Deterministic policy gradient, TD3 (Fujimoto, van Hoof and Meger, 2018).

    Paper: "Addressing Function Approximation Error in Actor-Critic Methods", ICML 2018.

    DDPG with three changes: the critic target takes the minimum of two target critics
    (clipped double-Q), its action is smoothed,
    ``a' = clip(mu_target(s') + clip(N(0, policy_noise), ±noise_clip), -1, 1)``, and the actor
    and the target networks are updated only every ``policy_freq`` critic steps. Each critic
    regresses on the same target; the actor maximises the first critic. The model's
    ``value(obs, act)`` returns both critics (``(Q1, Q2)`` as in PARL, or ``[2, B]`` in one
    batched pass as :class:`~parl_algos_ac.models.DeterministicActorCritic` with
    ``num_critics=2``). The counter of ``learn`` calls is saved in checkpoints.

    Examples:
        >>> from parl_algos_ac import TD3, DeterministicActorCritic
        >>> alg = TD3(DeterministicActorCritic(3, 1, num_critics=2), policy_freq=2)
    """

    Config = TD3Config
    config: TD3Config
    checkpoint_state = ("total_it",)
    # The counter stays in Python, outside the captured steps (compile=True).
    captured_methods = ("_critic_step", "_full_step")

    def __init__(
        self,
        model: Any,
        gamma: float | None = None,
        tau: float | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        policy_noise: float | None = None,
        noise_clip: float | None = None,
        policy_freq: int | None = None,
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
            policy_noise=policy_noise,
            noise_clip=noise_clip,
            policy_freq=policy_freq,
            **options,
        )
        self.total_it = 0

    def learn(  # type: ignore[override]  # PARL's TD3 returns the critic loss only
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any
    ) -> Tensor:
        """One critic step; every ``policy_freq``-th call also an actor step and a target update.

        Returns:
            The critic loss (summed over both critics) as a scalar tensor, as PARL's TD3.
        """
        batch = self._transitions(obs, action, reward, next_obs, terminal)
        self.total_it += 1
        if self.total_it % self.config.policy_freq == 0:
            return self._full_step(batch)
        return self._critic_step(batch)

    def _critic_step(self, batch: Transitions) -> Tensor:
        """A critic step; returns its loss."""
        return self._learn_critic(batch.obs, batch.action, self._target(batch))

    def _full_step(self, batch: Transitions) -> Tensor:
        """A critic step, an actor step and a soft target update; returns the critic loss."""
        critic_loss = self._critic_step(batch)
        self._minimize(self.actor_optimizer, self._actor_loss(batch.obs))
        self.sync_target()
        return critic_loss

    def _next_action(self, next_obs: Tensor) -> Tensor:
        """The smoothed target action ``clip(mu_target(s') + clipped noise, -1, 1)``."""
        action = self._call(self.target_model.policy, next_obs)
        noise = self.ops.randn_like(action) * self.config.policy_noise
        noise = self.ops.clip(noise, -self.config.noise_clip, self.config.noise_clip)
        return self.ops.clip(action + noise, -1.0, 1.0)
