"""REINFORCE (``PolicyGradient``) and its hyperparameters, written once for paddle and torch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from parl.core.config import AlgorithmConfig
from parl.core.ops import Tensor

from pydantic import PositiveFloat

from parl_algos_pg.on_policy import OnPolicyAlgorithm

__all__ = ["PolicyGradient", "PolicyGradientConfig"]

_MIN_PROB = 1e-8


class PolicyGradientConfig(AlgorithmConfig):
    """Hyperparameters of :class:`PolicyGradient`."""

    lr: PositiveFloat = 1e-3
    """Learning rate of the Adam optimizer."""

    model_output: Literal["probs", "logits"] = "probs"
    """What the model's ``forward`` returns: action probabilities (PARL) or logits (more stable)."""


class PolicyGradient(OnPolicyAlgorithm):
    """REINFORCE, the Monte-Carlo policy gradient (Williams, 1992).

    "Simple statistical gradient-following algorithms for connectionist reinforcement
    learning", Machine Learning 8. One :meth:`learn` call is one gradient step on::

        loss = mean(-log π(a|s) · G)

    over a batch of steps, where ``G`` is the (usually normalised) return from that step on.

    Model contract: ``forward(obs)`` maps a ``[B, obs_dim]`` batch to ``[B, n_actions]``
    action probabilities (a softmax output, as in PARL's QuickStart). Log-probabilities are
    taken as ``log(max(p, 1e-8))`` so that a saturated softmax cannot give ``-inf``; a model
    that returns logits instead should be used with ``model_output="logits"``, which uses
    ``log_softmax`` (exact and numerically safer). ``predict`` and ``sample`` pass the
    observation to the model as it is, so one unbatched observation ``[obs_dim]`` gives one
    probability vector or one action, as in PARL 2.x. It runs on the framework of its model
    (paddle or torch) and, on torch, on the model's device.

    Args:
        model: the policy network.
        lr: learning rate (``PolicyGradientConfig.lr``); ``None`` keeps the config's value.
        device: torch only: move the model there (``"cpu"``, ``"cuda"``, ``"cuda:<index>"``).
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
    policy_method = "forward"
    config: PolicyGradientConfig

    def __init__(
        self,
        model: Any,
        lr: float | None = None,
        *,
        device: Any = None,
        config: PolicyGradientConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("PolicyGradient needs a model: PolicyGradient(model, lr=1e-3)")
        super().__init__(model, device=device, config=config, lr=lr, **options)
        self._parameters = list(self.model.parameters())
        self.optimizer = self.ops.adam(self._parameters, lr=self.config.lr)

    def _policy_output(self, obs: Tensor) -> Tensor:
        out = self.model(obs)
        if self.config.model_output == "logits":
            return out
        return self.ops.clip(out, low=_MIN_PROB).log()

    def predict(self, obs: Any) -> Tensor:
        """Return the action probabilities ``[B, n_actions]`` (or ``[n_actions]`` for one obs)."""
        with self.ops.no_grad():
            return self._distribution(self._obs(obs), "PolicyGradient.predict").probs

    def sample(self, obs: Any) -> Tensor:
        """Draw one action per observation: int64 ``[B]``, or a scalar for one observation."""
        with self.ops.no_grad():
            return self._distribution(self._obs(obs), "PolicyGradient.sample").sample()

    def learn(self, obs: Any, action: Any, reward: Any) -> Tensor:
        """Take one gradient step on ``mean(-log π(action|obs) · reward)``.

        Args:
            obs: observations ``[B, obs_dim]`` (tensors or numpy arrays, as every input).
            action: the actions taken, ints shaped ``[B]`` or ``[B, 1]``.
            reward: the return ``G`` credited to each step, ``[B]`` or ``[B, 1]``.

        Returns:
            The loss (a scalar tensor; call ``float()`` on it only when you log it).

        Raises:
            ValueError: the batch sizes disagree, an input has the wrong rank or an action is
                out of the model's range.
            TypeError: the actions are not integers.
        """
        where = "PolicyGradient.learn"
        obs = self._batch_obs(obs, where)
        action = self._actions(action, obs, where)
        returns = self._batch_vector(reward, obs.shape[0], "reward", where)
        log_prob = self._distribution(obs, where, obs.shape[0]).log_prob(action)
        loss = -(log_prob * returns).mean()
        self.ops.step(self.optimizer, loss, self._parameters)
        return loss.detach()
