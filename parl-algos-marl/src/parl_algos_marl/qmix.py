"""QMIX: monotonic value-function factorisation, and its hyperparameters, written once for paddle
and torch."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from parl.core.base import check_model_method
from parl.core.config import UNSET, AlgorithmConfig
from parl.core.neutral import Algorithm
from parl.core.ops import Tensor

from pydantic import Field, PositiveFloat

from parl_algos_marl.episode_tensors import EpisodeTensors

__all__ = ["QMIX", "QMIXConfig"]

# Subtracted from the Q value of an unavailable action, so that no max or argmax picks it.
UNAVAILABLE = 1e8


class QMIXConfig(AlgorithmConfig):
    """Hyperparameters of :class:`QMIX` (PARL's names and defaults)."""

    double_q: bool = True
    """Pick the next greedy actions with the online agent network (Double DQN)."""

    gamma: float = Field(default=0.99, gt=0.0, le=1.0)
    """Discount factor of future rewards, in (0, 1]."""

    lr: PositiveFloat = 5e-4
    """Learning rate of the optimizer."""

    optimizer: Literal["rmsprop", "adam"] = "rmsprop"
    """``"rmsprop"``: rho 0.99, epsilon 1e-5 inside the square root (PARL's and PyMARL's);
    ``"adam"``: the framework's defaults (EPyMARL's)."""

    clip_grad_norm: PositiveFloat | None = None
    """Clip the gradients' global norm to this value; None does not clip."""

    td_lambda: float = Field(default=0.0, ge=0.0, le=1.0)
    """Regress ``Q_tot`` on TD(λ) returns built from the target networks' values, in [0, 1]
    (pymarl2's ``td_lambda``, 0.6 in its QMIX); 0 is the one-step target (PARL's, EPyMARL's)."""


class QMIX(Algorithm):
    """QMIX (Rashid et al., ICML 2018).

    Paper: "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent Reinforcement
    Learning", arXiv:1803.11485.

    A recurrent agent network, shared by the agents, gives each agent's ``Q_i(o_i, a_i)``; a
    mixer combines the chosen ones into ``Q_tot(s, ·)`` with weights that hypernetworks compute
    from the global state and keep non-negative, so that the agents' greedy actions are the
    team's. ``learn`` unrolls both networks over padded episode batches and regresses
    ``Q_tot`` on ``r + gamma·(1 - terminated)·Q_tot'(s', argmax Q_i(o'_i))`` (double Q, target
    networks), over the real transitions only; with ``td_lambda`` > 0 on the λ-return of
    those one-step targets, computed backwards over each episode.

    ``self.model`` is the agent network (its weights are what actors need, so
    ``get_weights`` is theirs); the mixer is ``self.qmixer_model``. ``sync_target`` copies
    both into their targets (or, with a ``decay``, moves them part of the way).

    Model contracts (checked at construction): ``agent_model.init_hidden()`` and
    ``agent_model(obs, hidden) → (q, hidden)``; ``qmixer_model(agent_qs, states)`` and a
    ``qmixer_model.n_agents`` number. It runs on the framework of its models (paddle or
    torch, both of the same one); the optimizer is paddle's RMSProp on both (or Adam,
    ``optimizer="adam"``).

    Args:
        agent_model: e.g. :class:`~parl_algos_marl.models.RNNAgentModel`.
        qmixer_model: e.g. :class:`~parl_algos_marl.models.QMixerModel`.
        double_q, gamma, lr, clip_grad_norm: see :class:`QMIXConfig` (``optimizer`` and
            ``td_lambda`` too, as keywords).
        device: torch only: move both models there (``"cpu"``, ``"cuda"``, ...); None keeps
            them where they are.
        config: a :class:`QMIXConfig` or a mapping of its fields.
    """

    Config: ClassVar[type[AlgorithmConfig]] = QMIXConfig
    config: QMIXConfig
    required_model_methods = ("init_hidden", "forward")

    def __init__(
        self,
        agent_model: Any,
        qmixer_model: Any,
        double_q: bool | None = None,
        gamma: float | None = None,
        lr: float | None = None,
        clip_grad_norm: float | None = UNSET,
        *,
        device: Any = None,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if agent_model is None or qmixer_model is None:
            raise TypeError("QMIX needs an agent model and a mixer model, got None")
        super().__init__(
            agent_model,
            config=config,
            double_q=double_q,
            gamma=gamma,
            lr=lr,
            clip_grad_norm=clip_grad_norm,
            **options,
        )
        check_model_method(qmixer_model, "forward", "QMIX", self.model_class)
        n_agents = getattr(qmixer_model, "n_agents", None)
        if not isinstance(n_agents, int) or isinstance(n_agents, bool) or n_agents < 1:
            raise ValueError(
                f"QMIX needs qmixer_model.n_agents, the number of agents (an int >= 1), got "
                f"{n_agents!r}; set it in the mixer's __init__"
            )
        if getattr(qmixer_model, "backend_name", None) != self.backend.name:
            raise TypeError(
                f"QMIX needs both models on one framework: the agent model is a "
                f"{self.backend.name} model, the mixer is {type(qmixer_model).__name__}; build "
                f"both with backend={self.backend.name!r}"
            )
        self.n_agents = n_agents
        self.qmixer_model = qmixer_model
        self.target_model = self.ops.make_target(agent_model)
        self.target_qmixer_model = self.ops.make_target(qmixer_model)
        parameters = [*agent_model.parameters(), *qmixer_model.parameters()]
        clip = self.config.clip_grad_norm
        if self.config.optimizer == "adam":
            self.optimizer = self.ops.adam(parameters, self.config.lr)
            self._clipped: tuple[list[Any], float | None] = (parameters, clip)
        else:  # paddle's RMSProp clips inside its step
            self.optimizer = self.ops.rmsprop(
                parameters, self.config.lr, rho=0.99, epsilon=1e-5, max_grad_norm=clip
            )
            self._clipped = ([], None)
        if device is not None:
            self.to(device)

    @property
    def agent_model(self) -> Any:
        """The agent network (PARL's name; the same object as ``model``)."""
        return self.model

    def predict_local_q(self, obs: Any, hidden_state: Any) -> tuple[Tensor, Tensor]:
        """Every agent's Q values ``[N, n_actions]`` and next hidden states; no gradients."""
        ops, device = self.ops, self.device
        with ops.no_grad():
            obs, hidden = (
                ops.to_tensor(obs, "float32", device),
                ops.to_tensor(hidden_state, "float32", device),
            )
            return self.model(obs, hidden)

    def set_lr(self, lr: float) -> None:
        """Set the optimizer's learning rate for the following steps (a schedule, such as the
        example's linear annealing to 0; not captured by ``compile=True``).

        Raises:
            ValueError: ``lr`` is not a non-negative number.
        """
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not lr >= 0:
            raise ValueError(f"lr must be a non-negative number, got {lr!r}")
        self.ops.set_lr(self.optimizer, float(lr))

    def get_lr(self) -> float:
        """The learning rate of the optimizer's next step."""
        return self.ops.get_lr(self.optimizer)

    def sync_target(self, decay: float = 0.0) -> None:
        """Move the agent network's and the mixer's targets towards them:
        ``target = decay·target + (1 - decay)·model``; 0 (PARL's) copies, ``1 - tau`` is a
        soft (Polyak) update with rate ``tau`` (EPyMARL's ``target_update_interval_or_tau``
        below 1)."""
        self.ops.update_target(self.model, self.target_model, decay)
        self.ops.update_target(self.qmixer_model, self.target_qmixer_model, decay)

    def learn(
        self,
        state_batch: Any,
        actions_batch: Any,
        reward_batch: Any,
        terminated_batch: Any,
        obs_batch: Any,
        available_actions_batch: Any,
        filled_batch: Any,
    ) -> tuple[Tensor, Tensor]:
        """One optimizer step on the masked mean squared TD error of ``Q_tot``.

        Step ``t`` of ``T`` holds the observations and state seen at ``t`` and the actions,
        reward and termination of the transition from ``t``; the last step only supplies the
        next observations of the one before. A transition counts when it is not padding and
        no earlier step of its episode terminated. Unlike PARL, the terminating transition
        itself counts (PARL's mask ``(1 - filled)(1 - terminated)`` dropped it, so its reward
        was never learnt).

        Args:
            state_batch: ``[B, T, state_dim]``.
            actions_batch: ``[B, T, n_agents]`` integers.
            reward_batch: ``[B, T, 1]`` (or ``[B, T]``), the team's reward.
            terminated_batch: ``[B, T, 1]``, 1 where the episode terminated (a time-limit
                truncation is 0, so it bootstraps).
            obs_batch: ``[B, T, n_agents, obs_dim]``.
            available_actions_batch: ``[B, T, n_agents, n_actions]``, 1 where allowed.
            filled_batch: ``[B, T, 1]``, 1 where the step is padding past the episode's end
                (PARL's convention).

        Returns:
            ``(loss, mean_td_error)`` as scalar tensors (PARL returned floats; reading them
            makes the host wait for the device, so do it only when logging). Tensor inputs are
            not read back: the 0/1 and empty-mask checks run on numpy inputs only.
        """
        ops = self.ops
        batch = EpisodeTensors.check(
            ops,
            self.device,
            self.n_agents,
            (
                state_batch,
                actions_batch,
                reward_batch,
                terminated_batch,
                obs_batch,
                available_actions_batch,
                filled_batch,
            ),
            "QMIX.learn",
            agents_from="qmixer_model.n_agents",
        )
        local_q = self._unroll(self.model, batch.obs)
        with ops.no_grad():
            target_local_q = self._unroll(self.target_model, batch.obs)[:, 1:]
            target_local_q = target_local_q - UNAVAILABLE * batch.unavailable[:, 1:]
            if self.config.double_q:
                online = local_q.detach()[:, 1:] - UNAVAILABLE * batch.unavailable[:, 1:]
                best = ops.one_hot(ops.argmax(online, axis=-1), online.shape[-1])
                next_q = ops.sum(target_local_q * best, axis=-1)
            else:
                next_q = ops.max(target_local_q, axis=-1)
            next_q_tot = self.target_qmixer_model(next_q, batch.state[:, 1:])
            target = self._targets(batch, next_q_tot)
        taken = ops.one_hot(batch.actions[:, :-1], local_q.shape[-1])
        chosen = ops.sum(local_q[:, :-1] * taken, axis=-1)
        q_tot = self.qmixer_model(chosen, batch.state[:, :-1])
        masked_td = (target - q_tot) * batch.mask
        count = ops.sum(batch.mask)
        loss = ops.sum(masked_td.square()) / count
        ops.step(self.optimizer, loss, *self._clipped)
        return loss.detach(), ops.sum(masked_td.detach()) / count

    def _targets(self, batch: EpisodeTensors, next_q_tot: Tensor) -> Tensor:
        """The regression targets ``[B, T - 1, 1]`` from the target values ``Q_tot'(s_t+1)``.

        One-step: ``y_t = r_t + gamma·(1 - d_t)·Q'_t+1``. TD(λ): ``G_t = r_t + gamma·(1 -
        d_t)·((1 - λ)·Q'_t+1 + λ·G_t+1)``, backwards in ``t``, where ``G_t+1`` is replaced by
        ``Q'_t+1`` when transition ``t + 1`` does not count: after the last step of a
        truncated episode (padding or the batch's end) the return bootstraps fully, and after
        a termination ``d_t = 1`` stops it. A Python loop over the steps, no value read back.
        """
        keep = self.config.gamma * (1.0 - batch.terminated)
        lam = self.config.td_lambda
        if lam == 0.0:
            return batch.reward + keep * next_q_tot
        steps = next_q_tot.shape[1]
        returns: list[Tensor] = []
        ahead = next_q_tot[:, steps - 1]
        for t in range(steps - 1, -1, -1):
            value = next_q_tot[:, t]
            g = batch.reward[:, t] + keep[:, t] * ((1.0 - lam) * value + lam * ahead)
            returns.append(g)
            if t:
                counts = batch.mask[:, t]
                ahead = counts * g + (1.0 - counts) * next_q_tot[:, t - 1]
        return self.ops.stack(returns[::-1], axis=1)

    def _unroll(self, model: Any, obs: Tensor) -> Tensor:
        """Run the agent network over the episodes: Q values ``[B, T, n_agents, n_actions]``."""
        batch, steps = obs.shape[0], obs.shape[1]
        init = model.init_hidden().reshape([1, -1])
        hidden = self.ops.broadcast_to(init, [batch * self.n_agents, init.shape[1]])
        local_qs = []
        for t in range(steps):
            q, hidden = model(obs[:, t].reshape([batch * self.n_agents, -1]), hidden)
            local_qs.append(q.reshape([batch, self.n_agents, -1]))
        return self.ops.stack(local_qs, axis=1)
