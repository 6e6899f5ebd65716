"""REINFORCE (``PolicyGradient``) and its hyperparameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from parl.core.batch import (
    as_batch_actions,
    as_batch_obs,
    as_batch_vector,
    check_action_range,
    to_tensor,
)
from parl.core.config import AlgorithmConfig
from parl.core.distributions import Categorical
from parl.core.paddle import Algorithm, Model

import paddle
from pydantic import PositiveFloat

__all__ = ["PolicyGradient", "PolicyGradientConfig"]

_MIN_PROB = 1e-8


class PolicyGradientConfig(AlgorithmConfig):
    """Hyperparameters of :class:`PolicyGradient`."""

    lr: PositiveFloat = 1e-3
    """Learning rate of the Adam optimizer."""

    model_output: Literal["probs", "logits"] = "probs"
    """What the model's ``forward`` returns: action probabilities (PARL) or logits (more stable)."""


class PolicyGradient(Algorithm):
    """REINFORCE, the Monte-Carlo policy gradient (Williams, 1992).

    "Simple statistical gradient-following algorithms for connectionist reinforcement
    learning", Machine Learning 8. The loss is ``mean(-log π(a|s) · G)`` over a batch of
    steps, where ``G`` is the (usually normalised) return from that step on.

    Model contract: ``forward(obs)`` maps a ``[B, obs_dim]`` batch to ``[B, n_actions]``
    action probabilities (a softmax output, as in PARL's QuickStart). Log-probabilities are
    taken as ``log(max(p, 1e-8))`` so that a saturated softmax cannot give ``-inf``; a model
    that returns logits instead should be used with ``model_output="logits"``, which uses
    ``log_softmax`` (exact and numerically safer). ``predict`` and ``sample`` pass the
    observation to the model as it is, so one unbatched observation ``[obs_dim]`` gives one
    probability vector or one action, as in PARL 2.x.

    Args:
        model: the policy network.
        lr: learning rate (``PolicyGradientConfig.lr``); ``None`` keeps the config's value.
        config: a :class:`PolicyGradientConfig` or a mapping of its fields.
        **options: further config fields, e.g. ``model_output="logits"``.

    Examples:
        >>> import parl
        >>> from parl.testing import LinearModel
        >>> PG = parl.algorithms.get("PolicyGradient")
        >>> alg = PG(LinearModel(4, 2), lr=1e-3, model_output="logits")
    """

    Config = PolicyGradientConfig
    required_model_methods = ("forward",)
    config: PolicyGradientConfig
    model: Model

    def __init__(
        self,
        model: Model,
        lr: float | None = None,
        *,
        config: PolicyGradientConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("PolicyGradient needs a model: PolicyGradient(model, lr=1e-3)")
        super().__init__(model, config=config, lr=lr, **options)
        self.optimizer = paddle.optimizer.Adam(
            learning_rate=self.config.lr, parameters=self.model.parameters()
        )

    def _policy(self, obs: paddle.Tensor) -> Categorical:
        out = self.model(obs)
        if self.config.model_output == "logits":
            return Categorical(out)
        return Categorical(paddle.log(out.clip(min=_MIN_PROB)))

    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Return the action probabilities ``[B, n_actions]`` (or ``[n_actions]`` for one obs)."""
        with paddle.no_grad():
            return self._policy(to_tensor(obs, "float32")).probs

    def sample(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Draw one action per observation: int64 ``[B]``, or a scalar for one observation."""
        with paddle.no_grad():
            return self._policy(to_tensor(obs, "float32")).sample()

    def learn(
        self, obs: paddle.Tensor, action: paddle.Tensor, reward: paddle.Tensor
    ) -> paddle.Tensor:
        """Take one gradient step on ``mean(-log π(action|obs) · reward)``.

        Args:
            obs: observations ``[B, obs_dim]``.
            action: the actions taken, ints shaped ``[B]`` or ``[B, 1]``.
            reward: the return ``G`` credited to each step, ``[B]`` or ``[B, 1]``.

        Returns:
            The loss (a scalar tensor).

        Raises:
            ValueError: the batch sizes disagree or an input has the wrong rank.
        """
        name = "PolicyGradient.learn"
        obs = as_batch_obs(obs, name)
        batch = obs.shape[0]
        action = as_batch_actions(action, batch, name)
        reward = as_batch_vector(reward, batch, "reward", name)
        policy = self._policy(obs)
        if policy.logits.ndim != 2 or policy.logits.shape[0] != batch:
            raise ValueError(
                f"{name}: the model returned shape {list(policy.logits.shape)}, expected "
                f"[{batch}, n_actions]; forward must map [B, obs_dim] to [B, n_actions]"
            )
        check_action_range(action, policy.logits.shape[1], name)
        taken = policy.log_prob(action)
        loss = paddle.mean(-taken * reward)
        self.optimizer.clear_grad()
        loss.backward()
        self.optimizer.step()
        return loss
