"""Advantage Actor-Critic (A2C), PARL's synchronous A3C, and its hyperparameters, written once for
paddle and torch."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from parl.core.config import AlgorithmConfig
from parl.core.distributions import Categorical
from parl.core.neutral import Algorithm
from parl.core.ops import Tensor

from pydantic import NonNegativeFloat, PositiveFloat

__all__ = ["A2C", "A2CConfig"]


class A2CConfig(AlgorithmConfig):
    """Hyperparameters of :class:`A2C` (PARL's names and values)."""

    vf_loss_coeff: NonNegativeFloat = 0.5
    """Weight of the value loss in the total loss."""

    initial_lr: PositiveFloat = 1e-3
    """Adam's learning rate until :meth:`A2C.learn` sets another (PARL hard-coded 0.001)."""

    max_grad_norm: PositiveFloat | None = 40.0
    """Clip the global gradient norm to this before each step (PARL: 40); None disables it."""


def _learning_rate(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value) >= 0:
        raise ValueError(
            f"learning_rate must be a number >= 0, got {value!r} (0 makes the step change "
            "nothing, as at the end of PARL's decaying schedules)"
        )
    if not math.isfinite(float(value)):
        raise ValueError(f"learning_rate must be finite, got {value!r}")
    return float(value)


def _entropy_coeff(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"entropy_coeff must be a number (negative, e.g. -0.01, to maximise entropy), got "
            f"{value!r}"
        )
    return float(value)


def _from_parl_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A2CConfig fields of PARL 2.x's torch config dict (``learning_rate`` is Adam's first)."""
    options: dict[str, Any] = {"vf_loss_coeff": config.get("vf_loss_coeff")}
    if "learning_rate" in config:
        options["initial_lr"] = config["learning_rate"]
    return options


class A2C(Algorithm):
    """Advantage Actor-Critic, A2C: the synchronous variant of A3C (Mnih et al., ICML 2016).

    Paper: "Asynchronous Methods for Deep Reinforcement Learning", arXiv:1602.01783.

    One :meth:`learn` call is one gradient step on a batch of ``(obs, action, advantage,
    target value)`` with PARL 2.x's conventions: **sums** over the batch, not means, and an
    entropy coefficient that is *added*, so a negative one (PARL's ``-0.01``) maximises
    entropy::

        pi_loss    = -sum(log pi(a|s) · A)
        vf_loss    = 0.5 · sum((V(s) - target)²)
        entropy    = sum(H(pi(·|s)))
        total_loss = pi_loss + vf_loss_coeff · vf_loss + entropy_coeff · entropy

    Adam with the global gradient norm clipped to ``max_grad_norm`` (40); the learning rate is
    set on every call, as PARL's schedule does. Log-probabilities come from ``log_softmax``
    (:class:`~parl.core.distributions.Categorical`).

    It runs on the framework of its model (paddle or torch); ``device=`` moves it (torch). The
    second argument may also be PARL 2.x torch's config dict (``vf_loss_coeff``,
    ``learning_rate``).

    Model contract (checked at construction): ``policy(obs)`` → logits ``[B, act_dim]``;
    ``value(obs)`` → ``[B]`` or ``[B, 1]``; ``policy_and_value(obs)`` → both from one pass.

    Examples:
        >>> from parl_algos_ac import A2C, DiscreteActorCritic
        >>> import numpy as np
        >>> alg = A2C(DiscreteActorCritic(4, 2), vf_loss_coeff=0.5)
        >>> list(alg.predict(np.zeros((3, 4), np.float32)).shape)
        [3]
    """

    Config = A2CConfig
    config: A2CConfig
    required_model_methods = ("policy", "value", "policy_and_value")

    def __init__(
        self,
        model: Any,
        vf_loss_coeff: float | Mapping[str, Any] | None = None,
        *,
        config: A2CConfig | Mapping[str, Any] | None = None,
        device: Any = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("A2C needs a model with policy(), value() and policy_and_value()")
        if isinstance(vf_loss_coeff, Mapping):  # PARL 2.x's torch A2C(model, config)
            options = {**_from_parl_config(vf_loss_coeff), **options}
        else:
            options["vf_loss_coeff"] = vf_loss_coeff
        super().__init__(model, config=config, **options)
        self._parameters = list(self.model.parameters())
        self.optimizer = self.ops.adam(self._parameters, lr=self.config.initial_lr)
        if device is not None:
            self.to(device)

    # -- acting ---------------------------------------------------------------------------

    def _policy_and_value(self, obs: Tensor) -> tuple[Categorical, Tensor]:
        try:
            logits, values = self.model.policy_and_value(obs)
        except (ValueError, RuntimeError) as exc:
            raise ValueError(
                f"A2C: the model could not take observations {list(obs.shape)}; feed "
                f"[batch, obs_dim] with the obs_dim it was built for ({exc})"
            ) from exc
        if values.ndim >= 2 and values.shape[-1] == 1:
            values = values.squeeze(-1)
        return Categorical(logits), values

    def prob_and_value(self, obs: Any) -> tuple[Tensor, Tensor]:
        """Return the action probabilities ``[B, act_dim]`` and values ``[B]`` (no grad)."""
        with self.ops.no_grad():
            dist, values = self._policy_and_value(self._obs(obs))
            return dist.probs, values

    def sample(self, obs: Any) -> tuple[Tensor, Tensor]:
        """Return sampled actions ``[B]`` (int64) and the values ``[B]`` (no gradients)."""
        with self.ops.no_grad():
            dist, values = self._policy_and_value(self._obs(obs))
            return dist.sample(), values

    def predict(self, obs: Any) -> Tensor:
        """Return the greedy actions (argmax of the logits); one obs or a batch."""
        with self.ops.no_grad():
            return self.ops.argmax(self.model.policy(self._obs(obs)), axis=-1)

    def value(self, obs: Any) -> Tensor:
        """Return state values ``[B]`` (no gradients); ``[B, 1]`` is squeezed."""
        with self.ops.no_grad():
            values = self.model.value(self._obs(obs))
            return values.squeeze(-1) if values.ndim >= 2 and values.shape[-1] == 1 else values

    def _obs(self, obs: Any) -> Tensor:
        return self.ops.to_tensor(obs, "float32", self.device)

    # -- learning -------------------------------------------------------------------------

    def learn(
        self,
        obs: Any,
        actions: Any,
        advantages: Any,
        target_values: Any,
        learning_rate: float,
        entropy_coeff: float,
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Take one gradient step (PARL's signature).

        Args:
            obs: observations ``[B, obs_dim]``.
            actions: the actions taken, integers ``[B]`` or ``[B, 1]``.
            advantages: ``[B]`` (e.g. GAE from ``parl.utils.compute_gae``).
            target_values: value targets ``[B]``.
            learning_rate: Adam's learning rate from this step on, >= 0 (PARL sets the rate it
                is given: at 0, where its decaying schedules end, the step changes nothing).
            entropy_coeff: weight of the summed entropy; negative maximises entropy.

        Returns:
            ``(total_loss, pi_loss, vf_loss, entropy)`` as scalar tensors.
        """
        ops, where = self.ops, "A2C.learn"
        learning_rate = _learning_rate(learning_rate)
        entropy_coeff = _entropy_coeff(entropy_coeff)
        obs = ops.as_batch_obs(obs, where)
        batch = obs.shape[0]
        given_actions, actions = actions, ops.as_batch_actions(actions, batch, where)
        advantages = ops.as_batch_vector(advantages, batch, "advantages", where)
        target_values = ops.as_batch_vector(target_values, batch, "target_values", where)
        obs, actions, advantages, target_values = (
            ops.move(tensor, self.device) for tensor in (obs, actions, advantages, target_values)
        )
        dist, values = self._policy_and_value(obs)
        if list(values.shape) != [batch] or list(dist.batch_shape) != [batch]:
            raise ValueError(
                f"{where}: model.policy_and_value gave logits {list(dist.logits.shape)} and "
                f"values {list(values.shape)} for {batch} observations; expected "
                f"[{batch}, act_dim] and [{batch}]"
            )
        ops.check_action_range(given_actions, dist.logits.shape[-1], where)  # host data only

        pi_loss = -ops.sum(dist.log_prob(actions) * advantages)
        vf_loss = 0.5 * ops.sum((values - target_values).square())
        entropy = ops.sum(dist.entropy())
        total_loss = pi_loss + self.config.vf_loss_coeff * vf_loss + entropy_coeff * entropy

        ops.set_lr(self.optimizer, learning_rate)
        ops.step(self.optimizer, total_loss, self._parameters, self.config.max_grad_norm)
        return total_loss.detach(), pi_loss.detach(), vf_loss.detach(), entropy.detach()
