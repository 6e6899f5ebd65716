"""Deep Q-Network (DQN) and its hyperparameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parl.core.batch import (
    BatchLike,
    as_batch_actions,
    as_batch_obs,
    as_batch_vector,
    to_tensor,
)
from parl.core.optim import clip_grad_norm_
from parl.core.paddle import Algorithm, Model
from parl.core.target import make_target, update_target

import paddle
import paddle.nn.functional as F

from parl_algos_dqn.config import DQNConfig

__all__ = ["DQN", "DQNConfig"]


class DQN(Algorithm):
    """Deep Q-Network, DQN (Mnih et al., Nature 2015).

    Paper: "Human-level control through deep reinforcement learning".

    Learns action values ``Q(s, a)`` by regressing on the one-step target
    ``r + gamma * (1 - terminal) * max_a' Q_target(s', a')``, where ``Q_target`` is a copy of
    the model that :meth:`sync_target` refreshes (:func:`parl.core.target.update_target`:
    parameters and buffers). The target is computed without gradients. ``predict`` gives the
    observation to the model as it is, so one unbatched observation works as in PARL 2.x.

    ``terminal`` must mark *terminated* transitions only (the MDP ended: ``terminated`` from
    gymnasium). A transition cut by a time limit (``truncated``) is stored with
    ``terminal=0`` so that its target still bootstraps from ``next_obs``.

    Args:
        model: a :class:`parl.Model` whose ``forward(obs)`` returns Q values ``[B, act_dim]``.
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
    model: Model
    target_model: Model
    required_model_methods = ("forward",)

    def __init__(
        self,
        model: Model,
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
        self.target_model = make_target(model)
        # Walking the layer tree for its parameters costs more than a small layer's matmul.
        self._parameters = self.model.parameters()
        # One fused update for all parameters: fewer per-op dispatches on small networks.
        self.optimizer = paddle.optimizer.Adam(
            learning_rate=self.config.lr,
            parameters=self._parameters,
            use_multi_tensor=True,
        )

    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Return the Q values ``[B, act_dim]`` (``[act_dim]`` for one observation), no grad."""
        with paddle.no_grad():
            return self.model(to_tensor(obs, "float32"))

    def learn(
        self,
        obs: BatchLike,
        action: BatchLike,
        reward: BatchLike,
        next_obs: BatchLike,
        terminal: BatchLike,
    ) -> paddle.Tensor:
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
        obs, action, reward, next_obs, terminal = self._check_batch(
            obs, action, reward, next_obs, terminal
        )
        with paddle.no_grad():
            next_value = self._next_value(next_obs)
            target = reward + (1.0 - terminal) * self.config.gamma * next_value
        q_values = self._q_values(self.model, obs)
        chosen = paddle.take_along_axis(q_values, action.unsqueeze(1), axis=1).squeeze(1)
        loss = self._td_loss(chosen, target)
        self.optimizer.clear_grad()
        loss.backward()
        if self.config.max_grad_norm is not None:
            clip_grad_norm_(self._parameters, self.config.max_grad_norm)
        self.optimizer.step()
        return loss

    def sync_target(self, decay: float | None = None) -> None:
        """Copy the model into the target model; with ``decay``, a soft (Polyak) update.

        Args:
            decay: the weight kept by the target, ``target = decay*target + (1-decay)*model``;
                None or 0 makes a hard copy.
        """
        update_target(self.model, self.target_model, decay=0.0 if decay is None else decay)

    def _next_value(self, next_obs: paddle.Tensor) -> paddle.Tensor:
        """The bootstrap value ``max_a' Q_target(s', a')``, shape ``[B]``."""
        return self._q_values(self.target_model, next_obs).max(axis=1)

    def _td_loss(self, chosen: paddle.Tensor, target: paddle.Tensor) -> paddle.Tensor:
        if self.config.loss == "huber":
            return F.smooth_l1_loss(chosen, target, delta=self.config.huber_delta)
        return F.mse_loss(chosen, target)

    def _q_values(self, model: Model, obs: paddle.Tensor) -> paddle.Tensor:
        try:
            q_values = model(obs)
        except ValueError as exc:
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

    def _check_batch(
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any
    ) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """Convert and check a batch: obs ``[B, ...]``, int64 actions and float ``[B]`` vectors."""
        where = f"{type(self).__name__}.learn"
        obs = as_batch_obs(obs, where)
        next_obs = as_batch_obs(next_obs, where, "next_obs")
        if list(obs.shape) != list(next_obs.shape):
            raise ValueError(
                f"{where} needs obs and next_obs of the same shape [batch, *obs_shape], "
                f"got {list(obs.shape)} and {list(next_obs.shape)}"
            )
        batch = obs.shape[0]
        return (
            obs,
            as_batch_actions(action, batch, where),
            as_batch_vector(reward, batch, "reward", where),
            next_obs,
            as_batch_vector(terminal, batch, "terminal", where),
        )
