"""Multi-Agent DDPG (MADDPG) and its hyperparameters, written once for paddle and torch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from parl.core.config import AlgorithmConfig
from parl.core.distributions import GumbelSoftmax, TanhGaussian
from parl.core.neutral import Algorithm
from parl.core.ops import Tensor

import gymnasium as gym
from pydantic import Field, PositiveFloat

__all__ = ["MADDPG", "MADDPGConfig"]

# PARL's weight of the squared policy output in the actor's loss (keeps logits bounded).
POLICY_REG = 1e-3
# PARL's paddle MADDPG clips each gradient tensor to this norm, in both optimizers.
GRAD_CLIP_NORM = 0.5


class MADDPGConfig(AlgorithmConfig):
    """Hyperparameters of :class:`MADDPG` (PARL's names; defaults of PARL's MPE example)."""

    gamma: float = Field(default=0.95, gt=0.0, le=1.0)
    """Discount factor of future rewards, in (0, 1]."""

    tau: float = Field(default=0.01, gt=0.0, le=1.0)
    """Rate of the soft target update ``target = (1 - tau)·target + tau·model``."""

    actor_lr: PositiveFloat = 1e-2
    """Learning rate of the actor's Adam optimizer."""

    critic_lr: PositiveFloat = 1e-2
    """Learning rate of the critic's Adam optimizer."""


class MADDPG(Algorithm):
    """Multi-Agent Deep Deterministic Policy Gradient, MADDPG (Lowe et al., NeurIPS 2017).

    Paper: "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments",
    arXiv:1706.02275.

    One instance learns for one agent (``agent_index``): its actor sees its own observation,
    its critic ``Q_i(obs_n, act_n)`` every agent's observation and action. The critic regresses
    on ``target_q``, which the caller computes from every agent's target policy (see
    :class:`~parl_algos_marl.agent.MADDPGAgent`); the actor maximises ``Q_i`` with its own action
    replaced by a reparameterised sample, plus PARL's ``1e-3·mean(policy_output²)``. Discrete
    actions are relaxed one-hots (:class:`~parl.core.distributions.GumbelSoftmax`), continuous
    ones ``tanh`` of a Gaussian (:class:`~parl.core.distributions.TanhGaussian`) in ``[-1, 1]``.

    Model contract (checked at construction): ``policy(obs)`` → logits ``[B, act_dim]`` or
    ``(mean, log_std)``; ``value(obs_n, act_n)`` → ``Q [B]``; ``get_actor_params()`` and
    ``get_critic_params()``. It runs on the framework of its model (paddle or torch); each
    gradient tensor is clipped to norm 0.5 by its own norm on both (PARL's paddle rule).

    Args:
        model: this agent's actor-critic model (e.g. :class:`~parl_algos_marl.models.MAModel`).
        agent_index: this agent's position in ``act_space``.
        act_space: every agent's action space (Discrete or 1-D Box), in agent order.
        gamma, tau, actor_lr, critic_lr: see :class:`MADDPGConfig`; None keeps the default.
        device: torch only: move the models there (``"cpu"``, ``"cuda"``, ...); None keeps
            the model's.
        config: a :class:`MADDPGConfig` or a mapping of its fields.
    """

    Config: ClassVar[type[AlgorithmConfig]] = MADDPGConfig
    config: MADDPGConfig
    required_model_methods = ("policy", "value", "get_actor_params", "get_critic_params")

    def __init__(
        self,
        model: Any,
        agent_index: int | None = None,
        act_space: Sequence[gym.Space[Any]] | None = None,
        gamma: float | None = None,
        tau: float | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        *,
        device: Any = None,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("MADDPG needs a parl.Model with policy() and value(), got None")
        super().__init__(
            model,
            config=config,
            gamma=gamma,
            tau=tau,
            actor_lr=actor_lr,
            critic_lr=critic_lr,
            **options,
        )
        self.act_space = _check_spaces(act_space)
        self.n = len(self.act_space)
        if not isinstance(agent_index, int) or not 0 <= agent_index < self.n:
            raise ValueError(
                f"agent_index must be an int in [0, {self.n}) for {self.n} action spaces, got "
                f"{agent_index!r}; pass this agent's position in act_space"
            )
        self.agent_index = agent_index
        self.continuous_actions = isinstance(self.act_space[agent_index], gym.spaces.Box)
        self.target_model = self.ops.make_target(model)
        adam = self.ops.adam_clipping_each
        self.actor_optimizer = adam(model.get_actor_params(), self.config.actor_lr, GRAD_CLIP_NORM)
        self.critic_optimizer = adam(
            model.get_critic_params(), self.config.critic_lr, GRAD_CLIP_NORM
        )
        if device is not None:
            self.to(device)

    @property
    def gamma(self) -> float:
        """The discount factor (``config.gamma``), which PARL 2.x's MADDPG agents read."""
        return self.config.gamma

    # -- acting ---------------------------------------------------------------------------

    def predict(self, obs: Any) -> Tensor:
        """The greedy action: one-hot of the best action, or ``tanh(mean)``; no gradients."""
        with self.ops.no_grad():
            return self._distribution(self.model, self._tensor(obs))[0].mode()

    def sample(self, obs: Any, use_target_model: bool = False) -> Tensor:
        """An exploratory action (relaxed one-hot or squashed Gaussian) of the model or its
        target; no gradients."""
        model = self.target_model if use_target_model else self.model
        with self.ops.no_grad():
            return self._distribution(model, self._tensor(obs))[0].rsample()

    def Q(
        self, obs_n: Sequence[Any], act_n: Sequence[Any], use_target_model: bool = False
    ) -> Tensor:
        """The centralised critic ``Q_i(obs_n, act_n)`` ``[B]`` of the model or its target."""
        obs_n, act_n = self._check_joint(obs_n, act_n, "Q")
        model = self.target_model if use_target_model else self.model
        with self.ops.no_grad():
            return model.value(obs_n, act_n)

    # -- learning -------------------------------------------------------------------------

    def learn(self, obs_n: Sequence[Any], act_n: Sequence[Any], target_q: Any) -> Tensor:
        """One critic step, one actor step and a soft target update (PARL's order).

        Args:
            obs_n: every agent's observations, a list of ``[B, obs_dim_j]``.
            act_n: every agent's actions, a list of ``[B, act_dim_j]`` (relaxed one-hots for
                discrete agents).
            target_q: the critic's regression target ``[B]``.

        Returns:
            The critic's loss, a scalar tensor.
        """
        obs_n, act_n = self._check_joint(obs_n, act_n, "learn")
        target = self.ops.as_batch_vector(target_q, obs_n[0].shape[0], "target_q", "MADDPG.learn")
        target = self.ops.move(target, self.device)
        critic_cost = self._learn_critic(obs_n, act_n, target)
        self._learn_actor(obs_n, act_n)
        self.sync_target()
        return critic_cost

    def sync_target(self, decay: float | None = None) -> None:
        """Soft-update the target: ``target = decay·target + (1 - decay)·model``; None uses
        ``1 - tau``, 0 copies."""
        self.ops.update_target(
            self.model, self.target_model, 1.0 - self.config.tau if decay is None else decay
        )

    def _learn_critic(self, obs_n: list[Tensor], act_n: list[Tensor], target: Tensor) -> Tensor:
        cost = self.ops.mse_loss(self.model.value(obs_n, act_n), target)
        self.ops.step(self.critic_optimizer, cost)
        return cost.detach()

    def _learn_actor(self, obs_n: list[Tensor], act_n: list[Tensor]) -> None:
        dist, output = self._distribution(self.model, obs_n[self.agent_index])
        act_n = list(act_n)
        act_n[self.agent_index] = dist.rsample()
        reg = self.ops.mean(self.ops.concat([t.square().reshape([-1]) for t in output]))
        cost = -self.ops.mean(self.model.value(obs_n, act_n)) + POLICY_REG * reg
        self.ops.step(self.actor_optimizer, cost)
        # The actor's step also filled the critic's gradients; the next critic step clears them.

    def _tensor(self, value: Any) -> Tensor:
        return self.ops.to_tensor(value, "float32", self.device)

    def _distribution(
        self, model: Any, obs: Tensor
    ) -> tuple[GumbelSoftmax | TanhGaussian, list[Tensor]]:
        """The policy's distribution at ``obs`` and the raw outputs it was built from."""
        output = model.policy(obs)
        if self.continuous_actions:
            mean, log_std = output
            return TanhGaussian.from_log_std(mean, log_std), [mean, log_std]
        return GumbelSoftmax(output), [output]

    def _check_joint(
        self, obs_n: Sequence[Any], act_n: Sequence[Any], method: str
    ) -> tuple[list[Tensor], list[Tensor]]:
        """Convert the per-agent lists; one entry per agent, one batch size for all."""
        where = f"MADDPG.{method}"
        for name, items in (("obs_n", obs_n), ("act_n", act_n)):
            if isinstance(items, (str, bytes)) or len(items) != self.n:
                got = len(items) if isinstance(items, Sequence) else type(items).__name__
                raise ValueError(
                    f"{where}: {name} must hold one batch per agent ({self.n} agents), got "
                    f"{got}; pass a list of every agent's batches in agent order"
                )
        ops = self.ops
        obs = [
            ops.move(ops.as_batch_obs(o, where, f"obs_n[{j}]"), self.device)
            for j, o in enumerate(obs_n)
        ]
        act = [
            ops.move(ops.as_batch_obs(a, where, f"act_n[{j}]"), self.device)
            for j, a in enumerate(act_n)
        ]
        sizes = {t.shape[0] for t in (*obs, *act)}
        if len(sizes) != 1:
            raise ValueError(
                f"{where}: every agent's batch must have the same size, got observation "
                f"batches {[o.shape[0] for o in obs]} and action batches "
                f"{[a.shape[0] for a in act]}"
            )
        return obs, act


def _check_spaces(act_space: Any) -> list[gym.Space[Any]]:
    if not isinstance(act_space, Sequence) or not act_space:
        raise ValueError(
            f"act_space must be the list of every agent's action space, got {act_space!r}; "
            "e.g. env.action_space of parl.env.multiagent_env.MAenv"
        )
    for index, space in enumerate(act_space):
        box = isinstance(space, gym.spaces.Box) and len(space.shape) == 1
        if not (box or isinstance(space, gym.spaces.Discrete)):
            raise ValueError(f"act_space[{index}] must be Discrete or a 1-D Box, got {space}")
    return list(act_space)
