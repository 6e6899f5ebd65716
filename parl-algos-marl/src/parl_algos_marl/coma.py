"""COMA: counterfactual multi-agent policy gradients, and its hyperparameters, written once for
paddle and torch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, NamedTuple

from parl.core.config import UNSET, AlgorithmConfig
from parl.core.neutral import Algorithm
from parl.core.ops import Tensor
from parl.core.validation import positive_int

import numpy as np
from pydantic import Field, NonNegativeFloat, PositiveFloat

from parl_algos_marl.episode_tensors import EpisodeTensors

__all__ = ["COMA", "COMAConfig", "COMAStats", "critic_input_dim"]

# Subtracted from the logit of an unavailable action, so that the softmax gives it 0.
UNAVAILABLE = 1e8


def critic_input_dim(obs_dim: int, state_dim: int, n_agents: int, n_actions: int) -> int:
    """The width of COMA's critic input row for one agent at one step:
    ``[state, obs_a, one_hot(u^-a), one_hot(u_{t-1}), one_hot(a)]`` (see :class:`COMA`)."""
    return state_dim + obs_dim + 2 * n_agents * n_actions + n_agents


class COMAConfig(AlgorithmConfig):
    """Hyperparameters of :class:`COMA` (PARL's names; defaults from PARL's SMAC example)."""

    grad_norm_clip: PositiveFloat | None = 10.0
    """Clip each network's gradients to this global norm; None does not clip."""

    actor_lr: PositiveFloat = 1e-4
    """Learning rate of the actor (the agents' shared policy)."""

    critic_lr: PositiveFloat = 1e-3
    """Learning rate of the centralised critic."""

    gamma: float = Field(default=0.99, gt=0.0, le=1.0)
    """Discount factor of future rewards, in (0, 1]."""

    td_lambda: float = Field(default=0.8, ge=0.0, le=1.0)
    """Lambda of the critic's TD(lambda) targets: 0 is one-step TD, 1 the Monte Carlo return
    (bootstrapped at a time limit)."""

    entropy_coef: NonNegativeFloat = 0.0
    """Weight of the policy's entropy bonus (PARL: none; EPyMARL: 0.001)."""

    optimizer: Literal["rmsprop", "adam"] = "rmsprop"
    """``rmsprop`` (PARL's; rho 0.99, epsilon 1e-5 inside the square root, paddle's form) or
    ``adam`` (EPyMARL's)."""


class COMAStats(NamedTuple):
    """What one :meth:`COMA.learn` call reports: scalar tensors from the algorithm (read
    back only when logged, so that an update never waits for the device), floats from
    :meth:`COMAAgent.learn <parl_algos_marl.COMAAgent.learn>`."""

    critic_loss: Any
    """The masked mean squared error of the critic against its TD(lambda) targets."""
    actor_loss: Any
    """The policy-gradient loss (with the entropy bonus) the actor stepped on."""
    entropy: Any
    """The policy's mean entropy over the real agent-steps."""


class COMA(Algorithm):
    """COMA (Foerster et al., AAAI 2018).

    Paper: "Counterfactual Multi-Agent Policy Gradients", arXiv:1705.08926.

    The agents act with one recurrent policy network (``model.policy``), each on its own
    observation; a centralised critic (``model.value``) sees the global state, the agent's
    observation, the other agents' actions, everyone's previous actions and the agent's id, and
    gives ``Q(s, (u^-a, ·))`` for every action of agent ``a`` at once. Its input row for agent
    ``a`` at step ``t`` is ``[state_t, obs_t^a, one_hot(u_t) with agent a's block zeroed,
    one_hot(u_{t-1}) (zeros at t = 0), one_hot(a)]``, :func:`critic_input_dim` wide (PARL's
    layout), built here from the episode batch.

    ``learn`` takes one on-policy batch of padded episodes and makes two steps:

    * the critic regresses ``Q(s_t, u_t)`` of the taken actions on TD(lambda) targets from a
      target critic, ``G_t = r_t + gamma·(1 - terminated_t)·((1 - lambda)·Q'_{t+1} +
      lambda·G_{t+1})``, with ``G = Q'`` at the row after an episode's last transition (a
      time limit bootstraps there; the episode batch holds the actions the policy picked at
      the final observation in that row, as PyMARL's runner does);
    * the actor ascends ``A^a = Q(s, u) - sum_u' pi^a(u'|tau^a) Q(s, (u^-a, u'))``, the
      counterfactual advantage, times ``log pi^a(u^a|tau^a)``, with the critic's values from
      before its step, plus ``entropy_coef`` times the policy's entropy.

    Unavailable actions get probability 0; ``learn(..., epsilon=e)`` mixes the policy with a
    uniform choice among the available actions, as the agent samples with the same ``e``
    (PARL's exploration). ``sync_target`` copies the model into the target (PARL: every 200
    learn calls, which the agent counts).

    Unlike PARL 2.2.1's torch COMA, whose ``_get_critic_output`` evaluates the "target" values
    with the online critic on the current step's inputs (so its TD targets bootstrap from
    ``Q(s_t, u_t)`` itself), the targets here come from the target critic at the next step.

    Model contract (checked at construction): ``policy(obs, hidden) → (logits, hidden)``,
    ``value(inputs) → Q [..., n_actions]``, ``init_hidden() → [1, hidden_dim]``,
    ``get_actor_params()`` and ``get_critic_params()``; e.g.
    :class:`~parl_algos_marl.models.COMAModel`. It runs on the framework of its model.

    Args:
        model: the actor and the critic (one ``parl.Model``).
        n_actions: actions per agent.
        n_agents: the number of agents.
        grad_norm_clip, actor_lr, critic_lr, gamma, td_lambda: see :class:`COMAConfig`.
        device: torch only: move the model there (``"cpu"``, ``"cuda"``, ...); None keeps it
            where it is.
        config: a :class:`COMAConfig` or a mapping of its fields.
        **options: further :class:`COMAConfig` fields (``entropy_coef``, ``optimizer``).
    """

    Config: ClassVar[type[AlgorithmConfig]] = COMAConfig
    config: COMAConfig
    required_model_methods = (
        "policy",
        "value",
        "init_hidden",
        "get_actor_params",
        "get_critic_params",
    )

    def __init__(
        self,
        model: Any,
        n_actions: int,
        n_agents: int,
        grad_norm_clip: float | None = UNSET,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        gamma: float | None = None,
        td_lambda: float | None = None,
        *,
        device: Any = None,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("COMA needs a model with policy and value (e.g. COMAModel), got None")
        super().__init__(
            model,
            config=config,
            grad_norm_clip=grad_norm_clip,
            actor_lr=actor_lr,
            critic_lr=critic_lr,
            gamma=gamma,
            td_lambda=td_lambda,
            **options,
        )
        self.n_actions = positive_int("n_actions", n_actions)
        self.n_agents = positive_int("n_agents", n_agents)
        self.target_model = self.ops.make_target(model)
        self.actor_optimizer = self._optimizer(model.get_actor_params(), self.config.actor_lr)
        self.critic_optimizer = self._optimizer(model.get_critic_params(), self.config.critic_lr)
        others = 1.0 - np.kron(np.eye(n_agents), np.ones((1, n_actions)))
        self._others_mask = others.astype(np.float32)  # [n_agents, n_agents * n_actions]
        self._on_device: dict[str, tuple[Tensor, Tensor]] = {}
        if device is not None:
            self.to(device)

    def _optimizer(self, parameters: Any, lr: float) -> Any:
        parameters = list(parameters)
        if self.config.optimizer == "adam":
            return self.ops.adam(parameters, lr)
        clip = self.config.grad_norm_clip
        return self.ops.rmsprop(parameters, lr, rho=0.99, epsilon=1e-5, max_grad_norm=clip)

    def _step(self, optimizer: Any, loss: Tensor, parameters: Any) -> None:
        if self.config.optimizer == "adam":
            self.ops.step(optimizer, loss, list(parameters), self.config.grad_norm_clip)
        else:  # the RMSProp optimizer clips its own gradients
            self.ops.step(optimizer, loss)

    def init_hidden(self, ep_num: int) -> Tensor:
        """The policy's hidden state at an episode's start for ``ep_num`` teams:
        ``[ep_num, n_agents, hidden_dim]`` (PARL's method)."""
        init = self.model.init_hidden().reshape([1, 1, -1])
        return self.ops.broadcast_to(init, [ep_num, self.n_agents, init.shape[-1]])

    def predict(self, obs: Tensor, rnn_h_in: Tensor) -> tuple[Tensor, Tensor]:
        """The policy's action probabilities ``[N, n_actions]`` and next hidden states for
        observations ``[N, obs_dim]`` (PARL's method; unavailable actions are the caller's)."""
        with self.ops.no_grad():
            logits, rnn_h_out = self.model.policy(obs, rnn_h_in)
            return self.ops.softmax(logits, axis=-1), rnn_h_out

    def sync_target(self, decay: float = 0.0) -> None:
        """Move the target towards the model: ``target = decay·target + (1 - decay)·model``
        (PARL: a hard copy, ``decay=0``)."""
        self.ops.update_target(self.model, self.target_model, decay)

    def learn(
        self,
        state_batch: Any,
        actions_batch: Any,
        reward_batch: Any,
        terminated_batch: Any,
        obs_batch: Any,
        available_actions_batch: Any,
        filled_batch: Any,
        *,
        epsilon: float = 0.0,
    ) -> COMAStats:
        """One critic step, then one actor step, on a batch of padded episodes.

        The arrays are an :class:`~parl_algos_marl.EpisodeBatch`'s, in its order (as
        :meth:`QMIX.learn <parl_algos_marl.qmix.QMIX.learn>`'s); rows past an episode's last
        transition are padding (``filled`` 1) except the first of them, which supplies the
        next state, observations and actions of the last transition.

        Args:
            state_batch: ``[B, T, state_dim]``.
            actions_batch: ``[B, T, n_agents]`` integers; row ``L`` of an episode of ``L``
                transitions: the actions picked at its final observation (used to bootstrap
                a truncated episode).
            reward_batch: ``[B, T, 1]`` (or ``[B, T]``), the team's reward.
            terminated_batch: ``[B, T, 1]``, 1 where the episode terminated (a time-limit
                truncation is 0, so it bootstraps).
            obs_batch: ``[B, T, n_agents, obs_dim]``, what the policy sees.
            available_actions_batch: ``[B, T, n_agents, n_actions]``, 1 where allowed.
            filled_batch: ``[B, T, 1]``, 1 where the step is padding (PARL's convention).
            epsilon: the weight of the uniform choice mixed into the policy when acting.

        Returns:
            :class:`COMAStats`.
        """
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"COMA.learn: epsilon must be in [0, 1], got {epsilon}")
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
            "COMA.learn",
            n_actions=self.n_actions,
        )
        inputs = self._critic_inputs(batch)
        q_values, critic_loss = self._critic_step(batch, inputs)
        actor_loss, entropy = self._actor_step(batch, q_values, epsilon)
        return COMAStats(critic_loss, actor_loss, entropy)

    def _critic_inputs(self, batch: EpisodeTensors) -> Tensor:
        """The critic's input rows ``[B, T, n_agents, critic_input_dim]``."""
        ops, n = self.ops, self.n_agents
        size, steps = batch.state.shape[0], batch.state.shape[1]
        rows = [size, steps, n]
        actions = ops.one_hot(batch.actions, self.n_actions)  # [B, T, n, A]
        previous = ops.concat([actions[:, :1] * 0.0, actions[:, :-1]], axis=1)
        joint = actions.reshape([size, steps, 1, -1])
        others, ids = self._critic_constants()
        return ops.concat(
            [
                ops.broadcast_to(batch.state.unsqueeze(2), [*rows, batch.state.shape[-1]]),
                batch.obs,
                ops.broadcast_to(joint, [*rows, joint.shape[-1]]) * others,
                ops.broadcast_to(previous.reshape([size, steps, 1, -1]), [*rows, joint.shape[-1]]),
                ops.broadcast_to(ids, [*rows, n]),
            ],
            axis=-1,
        )

    def _critic_constants(self) -> tuple[Tensor, Tensor]:
        """The others-actions mask and the agents' one-hot ids on the device, copied there
        once per device rather than once per update."""
        key = str(self.device)
        if key not in self._on_device:
            ops, eye = self.ops, np.eye(self.n_agents, dtype=np.float32)
            self._on_device[key] = (
                ops.to_tensor(self._others_mask, "float32", self.device),
                ops.to_tensor(eye, "float32", self.device),
            )
        return self._on_device[key]

    def _critic_step(self, batch: EpisodeTensors, inputs: Tensor) -> tuple[Tensor, Tensor]:
        """Step the critic on its TD(lambda) error; return its values before the step
        ``[B, T - 1, n, A]`` (no gradient) and the loss."""
        ops = self.ops
        with ops.no_grad():
            target_taken = ops.take_along(self.target_model.value(inputs), batch.actions)
            targets = self._td_lambda_targets(batch, target_taken)
        q_values = self.model.value(inputs[:, :-1])
        q_taken = ops.take_along(q_values, batch.actions[:, :-1])
        count = ops.sum(batch.mask) * self.n_agents
        loss = ops.sum(((q_taken - targets) * batch.mask).square()) / count
        self._step(self.critic_optimizer, loss, self.model.get_critic_params())
        return q_values.detach(), loss.detach()

    def _td_lambda_targets(self, batch: EpisodeTensors, target_taken: Tensor) -> Tensor:
        """``G_t`` ``[B, T - 1, n]`` from the target critic's ``Q'`` of the taken actions
        ``[B, T, n]``; a row that is not a real transition ends the recursion with ``Q'``."""
        gamma, lam = self.config.gamma, self.config.td_lambda
        transitions = batch.reward.shape[1]
        returns: list[Tensor] = []
        following = target_taken[:, -1]
        for t in reversed(range(transitions)):
            next_q = target_taken[:, t + 1]
            real_next = batch.mask[:, t + 1] if t + 1 < transitions else 0.0
            blend = next_q + lam * real_next * (following - next_q)
            following = batch.reward[:, t] + gamma * (1.0 - batch.terminated[:, t]) * blend
            returns.append(following)
        return self.ops.stack(returns[::-1], axis=1)

    def _actor_step(
        self, batch: EpisodeTensors, q_values: Tensor, epsilon: float
    ) -> tuple[Tensor, Tensor]:
        """Step the actor on the counterfactual policy gradient; return the loss and the
        mean entropy."""
        ops = self.ops
        unavailable = batch.unavailable[:, :-1]
        logits = self._unroll_policy(batch.obs[:, :-1]) - UNAVAILABLE * unavailable
        pi = ops.softmax(logits, axis=-1)
        if epsilon > 0.0:
            available = 1.0 - unavailable
            choices = ops.clip(ops.sum(available, axis=-1, keepdim=True), 1.0)
            pi = (1.0 - epsilon) * pi + epsilon * available / choices
            log_pi = ops.clip(pi, 1e-10).log()
        else:
            log_pi = ops.log_softmax(logits, axis=-1)
        taken = batch.actions[:, :-1]
        baseline = ops.sum(pi.detach() * q_values, axis=-1)
        advantage = ops.take_along(q_values, taken) - baseline
        entropy = -ops.sum(pi * (pi + 1e-10).log(), axis=-1)
        objective = advantage * ops.take_along(log_pi, taken)
        objective = objective + self.config.entropy_coef * entropy
        count = ops.sum(batch.mask) * self.n_agents
        loss = -ops.sum(objective * batch.mask) / count
        self._step(self.actor_optimizer, loss, self.model.get_actor_params())
        return loss.detach(), ops.sum(entropy.detach() * batch.mask) / count

    def _unroll_policy(self, obs: Tensor) -> Tensor:
        """The policy's logits ``[B, T', n_agents, n_actions]`` over observations
        ``[B, T', n_agents, obs_dim]``, from the hidden state of an episode's start."""
        size, steps = obs.shape[0], obs.shape[1]
        hidden = self.init_hidden(size).reshape([size * self.n_agents, -1])
        logits = []
        for t in range(steps):
            out, hidden = self.model.policy(obs[:, t].reshape([size * self.n_agents, -1]), hidden)
            logits.append(out.reshape([size, self.n_agents, -1]))
        return self.ops.stack(logits, axis=1)
