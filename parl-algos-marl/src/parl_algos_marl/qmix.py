"""QMIX: monotonic value-function factorisation, and its hyperparameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from parl.core.algorithm import check_model_method
from parl.core.batch import BatchLike, to_tensor
from parl.core.config import UNSET, AlgorithmConfig
from parl.core.paddle import Algorithm, Model
from parl.core.target import make_target, update_target

import paddle
import paddle.nn.functional as F
from pydantic import Field, PositiveFloat

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
    """Learning rate of the RMSProp optimizer (rho 0.99, epsilon 1e-5, as PARL)."""

    clip_grad_norm: PositiveFloat | None = None
    """Clip the gradients' global norm to this value; None does not clip."""


class QMIX(Algorithm):
    """QMIX (Rashid et al., ICML 2018).

    Paper: "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent Reinforcement
    Learning", arXiv:1803.11485.

    A recurrent agent network, shared by the agents, gives each agent's ``Q_i(o_i, a_i)``; a
    mixer combines the chosen ones into ``Q_tot(s, ·)`` with weights that hypernetworks compute
    from the global state and keep non-negative, so that the agents' greedy actions are the
    team's. ``learn`` unrolls both networks over padded episode batches and regresses
    ``Q_tot`` on ``r + gamma·(1 - terminated)·Q_tot'(s', argmax Q_i(o'_i))`` (double Q, target
    networks), over the real transitions only.

    ``self.model`` is the agent network (its weights are what actors need, so
    ``get_weights`` is theirs); the mixer is ``self.qmixer_model``. ``sync_target`` copies
    both into their targets.

    Model contracts (checked at construction): ``agent_model.init_hidden()`` and
    ``agent_model(obs, hidden) → (q, hidden)``; ``qmixer_model(agent_qs, states)`` and a
    ``qmixer_model.n_agents`` number.

    Args:
        agent_model: e.g. :class:`~parl_algos_marl.models.RNNAgentModel`.
        qmixer_model: e.g. :class:`~parl_algos_marl.models.QMixerModel`.
        double_q, gamma, lr, clip_grad_norm: see :class:`QMIXConfig`.
        config: a :class:`QMIXConfig` or a mapping of its fields.
    """

    Config: ClassVar[type[AlgorithmConfig]] = QMIXConfig
    config: QMIXConfig
    model: Model
    required_model_methods = ("init_hidden", "forward")

    def __init__(
        self,
        agent_model: Model,
        qmixer_model: Model,
        double_q: bool | None = None,
        gamma: float | None = None,
        lr: float | None = None,
        clip_grad_norm: float | None = UNSET,
        *,
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
        check_model_method(qmixer_model, "forward", "QMIX")
        n_agents = getattr(qmixer_model, "n_agents", None)
        if not isinstance(n_agents, int) or isinstance(n_agents, bool) or n_agents < 1:
            raise ValueError(
                f"QMIX needs qmixer_model.n_agents, the number of agents (an int >= 1), got "
                f"{n_agents!r}; set it in the mixer's __init__"
            )
        self.n_agents = n_agents
        self.qmixer_model = qmixer_model
        self.target_model = make_target(agent_model)
        self.target_qmixer_model = make_target(qmixer_model)
        clip = self.config.clip_grad_norm
        self.optimizer = paddle.optimizer.RMSProp(
            learning_rate=self.config.lr,
            rho=0.99,
            epsilon=1e-5,
            parameters=[*agent_model.parameters(), *qmixer_model.parameters()],
            grad_clip=paddle.nn.ClipGradByGlobalNorm(clip) if clip else None,
        )

    @property
    def agent_model(self) -> Model:
        """The agent network (PARL's name; the same object as ``model``)."""
        return self.model

    def predict_local_q(
        self, obs: BatchLike, hidden_state: BatchLike
    ) -> tuple[paddle.Tensor, paddle.Tensor]:
        """Every agent's Q values ``[N, n_actions]`` and next hidden states; no gradients."""
        with paddle.no_grad():
            return self.model(to_tensor(obs, "float32"), to_tensor(hidden_state, "float32"))

    def sync_target(self) -> None:
        """Copy the agent network and the mixer into their targets (PARL: a hard copy)."""
        update_target(self.model, self.target_model)
        update_target(self.qmixer_model, self.target_qmixer_model)

    def learn(
        self,
        state_batch: BatchLike,
        actions_batch: BatchLike,
        reward_batch: BatchLike,
        terminated_batch: BatchLike,
        obs_batch: BatchLike,
        available_actions_batch: BatchLike,
        filled_batch: BatchLike,
    ) -> tuple[float, float]:
        """One RMSProp step on the masked mean squared TD error of ``Q_tot``.

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
            ``(loss, mean_td_error)`` as floats.
        """
        batch = _Episodes.check(
            self.n_agents,
            state_batch,
            actions_batch,
            reward_batch,
            terminated_batch,
            obs_batch,
            available_actions_batch,
            filled_batch,
        )
        local_q = self._unroll(self.model, batch.obs)
        with paddle.no_grad():
            target_local_q = self._unroll(self.target_model, batch.obs)[:, 1:]
            target_local_q = target_local_q - UNAVAILABLE * batch.unavailable[:, 1:]
            if self.config.double_q:
                online = local_q.detach()[:, 1:] - UNAVAILABLE * batch.unavailable[:, 1:]
                best = F.one_hot(online.argmax(axis=-1), online.shape[-1])
                next_q = (target_local_q * best).sum(-1)
            else:
                next_q = target_local_q.max(axis=-1)
            next_q_tot = self.target_qmixer_model(next_q, batch.state[:, 1:])
            target = batch.reward + self.config.gamma * (1.0 - batch.terminated) * next_q_tot
        chosen = (local_q[:, :-1] * F.one_hot(batch.actions, local_q.shape[-1])).sum(-1)
        q_tot = self.qmixer_model(chosen, batch.state[:, :-1])
        masked_td = (target - q_tot) * batch.mask
        count = batch.mask.sum()
        loss = masked_td.square().sum() / count
        self.optimizer.clear_grad()
        loss.backward()
        self.optimizer.step()
        return float(loss), float(masked_td.sum() / count)

    def _unroll(self, model: Model, obs: paddle.Tensor) -> paddle.Tensor:
        """Run the agent network over the episodes: Q values ``[B, T, n_agents, n_actions]``."""
        batch, steps = obs.shape[0], obs.shape[1]
        hidden = model.init_hidden().reshape([1, -1]).expand([batch * self.n_agents, -1])
        local_qs = []
        for t in range(steps):
            q, hidden = model(obs[:, t].reshape([batch * self.n_agents, -1]), hidden)
            local_qs.append(q.reshape([batch, self.n_agents, -1]))
        return paddle.stack(local_qs, axis=1)


class _Episodes:
    """A checked, converted episode batch; transitions are the first ``T - 1`` steps."""

    def __init__(self, **tensors: paddle.Tensor) -> None:
        self.state = tensors["state"]
        self.obs = tensors["obs"]
        self.actions = tensors["actions"]
        self.reward = tensors["reward"]
        self.terminated = tensors["terminated"]
        self.unavailable = tensors["unavailable"]
        self.mask = tensors["mask"]

    @classmethod
    def check(
        cls,
        n_agents: int,
        state: Any,
        actions: Any,
        reward: Any,
        terminated: Any,
        obs: Any,
        available: Any,
        filled: Any,
    ) -> _Episodes:
        where = "QMIX.learn"
        state_t = to_tensor(state, "float32")
        obs_t = to_tensor(obs, "float32")
        if state_t.ndim != 3 or obs_t.ndim != 4 or state_t.shape[1] < 2:
            raise ValueError(
                f"{where}: state_batch must be [B, T, state_dim] and obs_batch [B, T, n_agents, "
                f"obs_dim] with T >= 2, got {list(state_t.shape)} and {list(obs_t.shape)}"
            )
        batch, steps = state_t.shape[0], state_t.shape[1]
        if list(obs_t.shape[:3]) != [batch, steps, n_agents]:
            raise ValueError(
                f"{where}: obs_batch must be [{batch}, {steps}, {n_agents}, obs_dim] for "
                f"{n_agents} agents (qmixer_model.n_agents), got {list(obs_t.shape)}"
            )
        actions_t = to_tensor(actions, "int64")
        available_t = to_tensor(available, "float32")
        if list(actions_t.shape) != [batch, steps, n_agents]:
            raise ValueError(
                f"{where}: actions_batch must be [{batch}, {steps}, {n_agents}], got "
                f"{list(actions_t.shape)}"
            )
        if available_t.ndim != 4 or list(available_t.shape[:3]) != [batch, steps, n_agents]:
            raise ValueError(
                f"{where}: available_actions_batch must be [{batch}, {steps}, {n_agents}, "
                f"n_actions], got {list(available_t.shape)}"
            )
        columns = {
            name: _column(value, batch, steps, name, where)
            for name, value in (
                ("reward_batch", reward),
                ("terminated_batch", terminated),
                ("filled_batch", filled),
            )
        }
        filled_t, terminated_t = columns["filled_batch"], columns["terminated_batch"]
        for name in ("terminated_batch", "filled_batch"):
            column = columns[name]
            if bool(((column != 0) & (column != 1)).any()):
                raise ValueError(f"{where}: {name} must hold 0 or 1 only")
        # A transition counts unless it is padding or its episode terminated before it.
        ended_before = paddle.cumsum(terminated_t, axis=1) - terminated_t
        mask = (1.0 - filled_t) * (ended_before == 0).astype("float32")
        if float(mask[:, :-1].sum()) == 0:
            raise ValueError(
                f"{where}: the masks leave no transition to learn from (filled_batch marks "
                "padding with 1: is every step marked as padding?)"
            )
        return cls(
            state=state_t,
            obs=obs_t,
            actions=actions_t[:, :-1],
            reward=columns["reward_batch"][:, :-1],
            terminated=terminated_t[:, :-1],
            unavailable=(available_t == 0).astype("float32"),
            mask=mask[:, :-1],
        )


def _column(value: Any, batch: int, steps: int, name: str, where: str) -> paddle.Tensor:
    """A ``[B, T, 1]`` or ``[B, T]`` input as ``[B, T, 1]`` float32."""
    tensor = to_tensor(value, "float32")
    if tensor.ndim == 2:
        tensor = tensor.unsqueeze(-1)
    if list(tensor.shape) != [batch, steps, 1]:
        raise ValueError(
            f"{where}: {name} must be [{batch}, {steps}, 1] to match state_batch, got "
            f"{list(to_tensor(value, 'float32').shape)}"
        )
    return tensor
