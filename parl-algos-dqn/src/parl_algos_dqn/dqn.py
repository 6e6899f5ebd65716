"""Deep Q-Network (DQN) and its hyperparameters, written once for paddle and torch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from parl.core.config import AlgorithmConfig
from parl.core.neutral import Algorithm
from parl.core.ops import Tensor
from parl.core.transitions import as_transitions

from pydantic import Field, PositiveFloat

__all__ = ["DQN", "DQNConfig"]


class DQNConfig(AlgorithmConfig):
    """Hyperparameters of :class:`DQN` (and :class:`~parl_algos_dqn.ddqn.DDQN`)."""

    gamma: float = Field(default=0.99, gt=0.0, le=1.0)
    """Discount factor of future rewards, in (0, 1]."""

    lr: PositiveFloat = 1e-3
    """Learning rate of the Adam optimizer of the Q-network."""

    loss: Literal["mse", "huber"] = "mse"
    """The TD loss, "mse" (mean squared error, PARL's default) or "huber" (smooth L1)."""

    huber_delta: PositiveFloat = 1.0
    """Where the Huber loss turns from quadratic to linear; used only with loss="huber"."""

    max_grad_norm: PositiveFloat | None = None
    """Clip the global gradient norm to this value before each step; None disables clipping."""


class DQN(Algorithm):
    """Deep Q-Network, DQN (Mnih et al., Nature 2015).

    Paper: "Human-level control through deep reinforcement learning".

    Learns action values ``Q(s, a)`` by regressing on the one-step target
    ``r + gamma * (1 - terminal) * max_a' Q_target(s', a')``, where ``Q_target`` is a copy of
    the model that :meth:`sync_target` refreshes (parameters and buffers). The target is
    computed without gradients. ``predict`` gives the observation to the model as it is, so
    one unbatched observation works as in PARL 2.x. It runs on the framework of its model
    (paddle or torch) and, on torch, on the model's device.

    ``terminal`` must mark *terminated* transitions only (the MDP ended: ``terminated`` from
    gymnasium). A transition cut by a time limit (``truncated``) is stored with
    ``terminal=0`` so that its target still bootstraps from ``next_obs``.

    Args:
        model: a ``parl.Model`` whose ``forward(obs)`` returns Q values ``[B, act_dim]``.
        gamma: discount factor; overrides ``config``.
        lr: learning rate; overrides ``config``.
        config: a :class:`DQNConfig` or a mapping of its fields.
        **options: further :class:`DQNConfig` fields, e.g. ``loss="huber"``.

    Examples:
        >>> from parl_algos_dqn import DQN, DuelingQNetwork
        >>> alg = DQN(DuelingQNetwork(obs_dim=4, act_dim=2), gamma=0.99, lr=1e-3)
        >>> alg.sync_target()
    """

    Config = DQNConfig
    config: DQNConfig
    required_model_methods = ("forward",)

    def __init__(
        self,
        model: Any,
        gamma: float | None = None,
        lr: float | None = None,
        *,
        config: DQNConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError(
                f"{type(self).__name__} needs a parl.Model that maps obs to Q values, got None"
            )
        super().__init__(model, config=config, gamma=gamma, lr=lr, **options)
        self.target_model = self.ops.make_target(model)
        # Walking the layer tree for its parameters costs more than a small layer's matmul.
        self._parameters = list(self.model.parameters())
        self.optimizer = self.ops.adam(self._parameters, lr=self.config.lr)

    def predict(self, obs: Any) -> Tensor:
        """Return the Q values ``[B, act_dim]`` (``[act_dim]`` for one observation), no grad."""
        with self.ops.no_grad():
            return self.model(self.ops.to_tensor(obs, "float32", self.device))

    def learn(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> Tensor:
        """Take one gradient step on a batch of transitions and return the TD loss.

        Args:
            obs: observations ``[B, *obs_shape]`` (tensors or numpy arrays, as every input).
            action: integer actions ``[B]`` or ``[B, 1]``.
            reward: rewards ``[B]`` or ``[B, 1]``.
            next_obs: next observations, shaped like ``obs``.
            terminal: 1 where the episode *terminated* at this transition, else 0 (also 0
                for a time-limit truncation, so that the target bootstraps); ``[B]`` or
                ``[B, 1]``, float or bool.

        Returns:
            The scalar loss as a tensor (call ``float()`` on it only when you log it, which
            saves a host round trip per step).
        """
        batch = as_transitions(self, obs, action, reward, next_obs, terminal)
        with self.ops.no_grad():
            target = batch.reward + (1.0 - batch.terminal) * self.config.gamma * self._next_value(
                batch.next_obs
            )
        chosen = self.ops.take_along(self._q_values(self.model, batch.obs), batch.action)
        loss = self._td_loss(chosen, target)
        self.ops.step(self.optimizer, loss, self._parameters, self.config.max_grad_norm)
        return loss.detach()

    def sync_target(self, decay: float | None = None) -> None:
        """Copy the model into the target model; with ``decay``, a soft (Polyak) update.

        Args:
            decay: the weight kept by the target, ``target = decay*target + (1-decay)*model``;
                None or 0 makes a hard copy.
        """
        self.ops.update_target(self.model, self.target_model, 0.0 if decay is None else decay)

    def _next_value(self, next_obs: Tensor) -> Tensor:
        """The bootstrap value ``max_a' Q_target(s', a')``, shape ``[B]``."""
        return self.ops.max(self._q_values(self.target_model, next_obs), axis=1)

    def _td_loss(self, chosen: Tensor, target: Tensor) -> Tensor:
        if self.config.loss == "huber":
            return self.ops.huber_loss(chosen, target, self.config.huber_delta)
        return self.ops.mse_loss(chosen, target)

    def _q_values(self, model: Any, obs: Tensor) -> Tensor:
        try:
            q_values = model(obs)
        except (ValueError, RuntimeError) as exc:
            raise ValueError(
                f"{type(self).__name__}: the model could not take observations of shape "
                f"{list(obs.shape)}; feed [batch, *obs_shape] with the obs_shape the model was "
                f"built for ({exc})"
            ) from exc
        if q_values.ndim != 2 or q_values.shape[0] != obs.shape[0]:
            raise ValueError(
                f"{type(self).__name__} needs the model to return Q values [batch, act_dim], "
                f"got shape {list(q_values.shape)} for a batch of {obs.shape[0]}"
            )
        return q_values
