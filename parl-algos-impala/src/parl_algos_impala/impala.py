"""IMPALA (Espeholt et al., 2018): an actor-critic corrected off-policy by V-trace, written once
for paddle and torch."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parl.core.config import UNSET, AlgorithmConfig
from parl.core.distributions import Categorical
from parl.core.neutral import Algorithm
from parl.core.ops import Tensor

from pydantic import Field, NonNegativeFloat, PositiveFloat

from parl_algos_impala.vtrace import from_importance_weights

__all__ = ["IMPALA", "IMPALAConfig", "VTraceLoss"]


class IMPALAConfig(AlgorithmConfig):
    """Hyperparameters of :class:`IMPALA` (PARL's names; defaults from its Atari config)."""

    sample_batch_steps: int = Field(default=50, ge=2)
    """``T``: steps per trajectory; ``learn`` cuts its ``[B*T]`` batch into ``B`` of them."""

    gamma: float = Field(default=0.99, ge=0.0, le=1.0)
    """Discount factor."""

    vf_loss_coeff: NonNegativeFloat = 0.5
    """Weight of the value loss in the total loss."""

    clip_rho_threshold: PositiveFloat | None = 1.0
    """``ρ̄`` of V-trace's value targets; None: no clipping."""

    clip_pg_rho_threshold: PositiveFloat | None = 1.0
    """``ρ̄_pg`` of V-trace's policy-gradient advantages; None: no clipping."""

    initial_lr: PositiveFloat = 1e-3
    """Learning rate of Adam until ``learn(..., learning_rate=...)`` sets another."""

    entropy_coeff: float = -0.01
    """Weight of the summed entropy in the loss when ``learn`` gets none (negative: a bonus)."""

    max_grad_norm: PositiveFloat | None = 40.0
    """Gradients are rescaled to this global L2 norm at most (PARL: 40); None: no clipping."""


@dataclass(frozen=True)
class VTraceLoss:
    """The losses of one :meth:`IMPALA.learn` step, scalar tensors without gradient.

    ``total_loss = pi_loss + vf_loss_coeff · vf_loss + entropy_coeff · entropy`` (sums over the
    ``(T - 1) · B`` steps that have a successor in their trajectory, as PARL).
    """

    total_loss: Tensor
    pi_loss: Tensor
    """``-Σ log π(a_t|x_t) · pg_advantage_t``."""
    vf_loss: Tensor
    """``0.5 · Σ (V(x_t) - v_t)²``."""
    entropy: Tensor
    """``Σ H(π(·|x_t))``."""


class IMPALA(Algorithm):
    """IMPALA: V-trace actor-critic for learning from trajectories of lagging behaviour policies.

    Espeholt et al., "IMPALA: Scalable Distributed Deep-RL with Importance Weighted
    Actor-Learner Architectures", ICML 2018. :meth:`learn` takes ``B`` trajectories of
    ``T = sample_batch_steps`` steps, flattened trajectory by trajectory to ``[B*T, ...]`` (PARL's
    layout: row ``b*T + t`` is step ``t`` of trajectory ``b``). The last step of each trajectory
    only provides the bootstrap value ``V(x_{T-1})``; the other ``T - 1`` steps are learned from
    with V-trace targets (:func:`~parl_algos_impala.vtrace.from_importance_weights`), PARL's
    summed losses and Adam with global-norm gradient clipping (``max_grad_norm``).

    ``dones[t]`` (bool or 0/1 float) says the episode ended with step ``t``: the discount after
    it is 0. **Truncation** (a time limit) is not an end of the task: fold the discounted value
    of the final observation into that step's reward, ``r_t + γ · V(final_obs)``, and mark the
    step done; :meth:`parl.utils.Rollout.bootstrapped_rewards` does exactly this with
    :meth:`value`, and :class:`~parl_algos_impala.harness.Learner` does it for its actors'
    trajectories. The cut at the end of a trajectory needs nothing: its last row bootstraps.

    Model contract (checked at construction): ``policy(obs)`` → logits ``[B, n_actions]``;
    ``value(obs)`` → values ``[B]`` or ``[B, 1]``.

    The positional hyperparameters after ``model`` are PARL's; ``None`` keeps the config's value
    except for the two thresholds, where ``None`` means no clipping (as in PARL). It runs on the
    framework of its model (paddle or torch) and, on torch, on ``device`` (or the model's).

    Examples:
        >>> import numpy as np
        >>> import parl
        >>> from parl.core.neutral import Model
        >>> class TinyModel(Model):  # one model for both frameworks
        ...     def __init__(self, *, backend=None) -> None:
        ...         super().__init__()
        ...         self.pi, self.v = self.nn.Linear(4, 2), self.nn.Linear(4, 1)
        ...     def policy(self, obs):
        ...         return self.pi(obs)
        ...     def value(self, obs):
        ...         return self.v(obs).squeeze(-1)
        >>> IMPALA = parl.algorithms.get("IMPALA")
        >>> alg = IMPALA(TinyModel(backend="paddle"), 20, 0.99, 0.5)
        >>> probs, logits = alg.sample(np.zeros((3, 4), dtype=np.float32))
        >>> list(probs.shape)
        [3, 2]
    """

    Config = IMPALAConfig
    required_model_methods = ("policy", "value")
    batch_reduction = "sum"
    config: IMPALAConfig

    def __init__(
        self,
        model: Any,
        sample_batch_steps: int | None = None,
        gamma: float | None = None,
        vf_loss_coeff: float | None = None,
        clip_rho_threshold: float | None = UNSET,
        clip_pg_rho_threshold: float | None = UNSET,
        *,
        device: Any = None,
        config: IMPALAConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("IMPALA needs a model with policy() and value(): IMPALA(model, ...)")
        super().__init__(
            model,
            config=config,
            sample_batch_steps=sample_batch_steps,
            gamma=gamma,
            vf_loss_coeff=vf_loss_coeff,
            clip_rho_threshold=clip_rho_threshold,
            clip_pg_rho_threshold=clip_pg_rho_threshold,
            **options,
        )
        self._parameters = list(self.model.parameters())
        self.optimizer = self.ops.adam(self._parameters, lr=self.config.initial_lr)
        if device is not None:
            self.to(device)

    @property
    def sample_batch_steps(self) -> int:
        """``T``, the trajectory length :meth:`learn` expects (PARL's attribute)."""
        return self.config.sample_batch_steps

    # -- acting ---------------------------------------------------------------------------

    def _obs(self, obs: Any) -> Tensor:
        return self.ops.to_tensor(obs, "float32", self.device)

    def sample(self, obs: Any) -> tuple[Tensor, Tensor]:
        """Return ``(probs, logits)`` of the policy, ``[B, n_actions]`` each (PARL's API).

        The caller draws the action from ``probs`` and keeps ``logits`` as the behaviour
        logits that :meth:`learn` needs.
        """
        with self.ops.no_grad():
            policy = Categorical(self.model.policy(self._obs(obs)))
            return policy.probs, policy.logits

    def predict(self, obs: Any) -> Tensor:
        """Return the greedy actions (argmax of the logits), int64 ``[B]`` or a scalar."""
        with self.ops.no_grad():
            return self.ops.argmax(self.model.policy(self._obs(obs)), axis=-1)

    def value(self, obs: Any) -> Tensor:
        """Return state values ``[B]`` (no gradient), e.g. to bootstrap a truncation."""
        obs = self._obs(obs)
        with self.ops.no_grad():
            return self._values(obs, obs.shape[0], "IMPALA.value")

    # -- learning -------------------------------------------------------------------------

    def _values(self, obs: Tensor, batch: int, where: str) -> Tensor:
        values = self.model.value(obs)
        if values.ndim == 2 and values.shape[1] == 1:
            values = values.squeeze(-1)
        if list(values.shape) != [batch]:
            raise ValueError(
                f"{where}: model.value returned {list(values.shape)}, expected [{batch}] or "
                f"[{batch}, 1]"
            )
        return values

    def _time_major(self, tensor: Tensor) -> Tensor:
        """``[B*T]`` trajectory by trajectory → ``[T, B]``."""
        return tensor.reshape([-1, self.config.sample_batch_steps]).T

    def _check_batch(self, obs: Tensor, where: str) -> int:
        steps = self.config.sample_batch_steps
        rows = obs.shape[0]
        if rows == 0 or rows % steps:
            raise ValueError(
                f"{where}: got {rows} steps, which is not a whole number of trajectories of "
                f"sample_batch_steps={steps}; pass B*{steps} rows, trajectory after trajectory"
            )
        return rows

    def _set_lr(self, learning_rate: float | None) -> None:
        if learning_rate is None:
            return
        if (
            isinstance(learning_rate, bool)
            or not isinstance(learning_rate, numbers.Real)
            or not learning_rate > 0
        ):
            raise ValueError(
                f"learning_rate must be a positive number or None (keep the current rate), got "
                f"{learning_rate!r}"
            )
        self.ops.set_lr(self.optimizer, learning_rate)

    def learn(
        self,
        obs: Any,
        actions: Any,
        behaviour_logits: Any,
        rewards: Any,
        dones: Any,
        learning_rate: float | None = None,
        entropy_coeff: float | None = None,
    ) -> tuple[VTraceLoss, Tensor]:
        """Take one gradient step on ``B`` trajectories of ``T`` steps (PARL's signature).

        Args:
            obs: observations ``[B*T, ...]``, trajectory after trajectory (tensors or numpy
                arrays, as every input).
            actions: the actions taken, ints ``[B*T]``.
            behaviour_logits: the acting policy's logits ``[B*T, n_actions]``.
            rewards: ``[B*T]``.
            dones: ``[B*T]`` bool or 0/1 float: the episode ended with this step.
            learning_rate: a new learning rate, kept for later steps; None keeps the current.
            entropy_coeff: weight of the summed entropy (negative to encourage exploration, as
                PARL); None: the config's ``entropy_coeff``.

        Returns:
            ``(vtrace_loss, kl)``: a :class:`VTraceLoss` and the mean ``KL(π_target ‖ π_behaviour)``
            over the batch, a scalar tensor.

        Raises:
            ValueError: the batch is not whole trajectories, or a shape disagrees with the batch
                or with the model's number of actions.
        """
        ops, where = self.ops, "IMPALA.learn"
        obs = ops.move(ops.as_batch_obs(obs, where), self.device)
        rows = self._check_batch(obs, where)
        given_actions = actions
        actions = ops.move(ops.as_batch_actions(actions, rows, where), self.device)
        behaviour_logits = ops.to_tensor(behaviour_logits, "float32", self.device)
        rewards = ops.move(ops.as_batch_vector(rewards, rows, "rewards", where), self.device)
        dones = ops.move(ops.as_batch_vector(dones, rows, "dones", where), self.device)
        entropy_coeff = self.config.entropy_coeff if entropy_coeff is None else entropy_coeff
        self._set_lr(learning_rate)

        target = Categorical(self.model.policy(obs))
        n_actions = target.logits.shape[-1]
        if list(target.logits.shape) != [rows, n_actions]:
            raise ValueError(
                f"{where}: model.policy returned {list(target.logits.shape)}, expected "
                f"[{rows}, n_actions]"
            )
        if list(behaviour_logits.shape) != [rows, n_actions]:
            raise ValueError(
                f"{where}: behaviour_logits has shape {list(behaviour_logits.shape)}, expected "
                f"[{rows}, {n_actions}]: one row of logits per step, as wide as model.policy's "
                f"{n_actions} actions"
            )
        ops.check_action_range(given_actions, n_actions, where)  # host data only
        behaviour = Categorical(behaviour_logits)
        values = self._values(obs, rows, where)
        loss = self._loss(target, behaviour, actions, rewards, dones, values, entropy_coeff)
        ops.step(
            self.optimizer,
            loss.total_loss,
            self._parameters,
            self.config.max_grad_norm,
            self.replicas,
        )
        with ops.no_grad():
            kl = ops.mean(target.kl(behaviour))
        detached = VTraceLoss(*(t.detach() for t in vars(loss).values()))
        return detached, kl.detach()

    def _loss(
        self,
        target: Categorical,
        behaviour: Categorical,
        actions: Tensor,
        rewards: Tensor,
        dones: Tensor,
        values: Tensor,
        entropy_coeff: float,
    ) -> VTraceLoss:
        cfg = self.config
        split = self._time_major
        target_logp = split(target.log_prob(actions))
        behaviour_logp = split(behaviour.log_prob(actions))
        entropy = split(target.entropy())
        values_tb = split(values)
        discounts = (1.0 - split(dones)) * cfg.gamma
        vtrace = from_importance_weights(
            behaviour_actions_log_probs=behaviour_logp[:-1],
            target_actions_log_probs=target_logp[:-1],
            discounts=discounts[:-1],
            rewards=split(rewards)[:-1],
            values=values_tb[:-1],
            bootstrap_value=values_tb[-1],
            clip_rho_threshold=cfg.clip_rho_threshold,
            clip_pg_rho_threshold=cfg.clip_pg_rho_threshold,
        )
        pi_loss = -(target_logp[:-1] * vtrace.pg_advantages).sum()
        vf_loss = 0.5 * (values_tb[:-1] - vtrace.vs).square().sum()
        entropy_sum = entropy[:-1].sum()
        total = pi_loss + cfg.vf_loss_coeff * vf_loss + entropy_coeff * entropy_sum
        return VTraceLoss(total, pi_loss, vf_loss, entropy_sum)
