"""Deep Q-Network (DQN) on torch: the update of :mod:`parl_algos_dqn.dqn`, with torch's ops."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parl.core.torch import Algorithm, Model
from parl.core.torch.batch import BatchLike, as_batch_actions, as_batch_obs, as_batch_vector
from parl.core.torch.batch import to_tensor as _to_tensor
from parl.core.torch.optim import clip_grad_norm_
from parl.core.torch.target import make_target, update_target

import torch
import torch.nn.functional as F

from parl_algos_dqn.config import DQNConfig

__all__ = ["DQN", "DQNConfig"]


class DQN(Algorithm):
    """Deep Q-Network, DQN (Mnih et al., Nature 2015), on torch.

    Paper: "Human-level control through deep reinforcement learning".

    The paddle class's algorithm (:class:`parl_algos_dqn.dqn.DQN`, see it for the update) and
    config (:class:`~parl_algos_dqn.config.DQNConfig`): the target
    ``r + gamma * (1 - terminal) * max_a' Q_target(s', a')`` is computed without gradients,
    ``terminal`` marks terminated (not truncated) transitions. Inputs may be numpy arrays or
    tensors on any device; they are moved to :attr:`device`.

    Args:
        model: a ``parl.core.torch.Model`` whose ``forward(obs)`` returns ``[B, act_dim]``.
        gamma: discount factor; overrides ``config``.
        lr: learning rate; overrides ``config``.
        config: a :class:`DQNConfig` or a mapping of its fields.
        **options: further :class:`DQNConfig` fields, e.g. ``loss="huber"``.
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
        self._parameters = list(self.model.parameters())
        self.optimizer = torch.optim.Adam(self._parameters, lr=self.config.lr)

    def predict(self, obs: BatchLike) -> torch.Tensor:
        """Return the Q values ``[B, act_dim]`` (``[act_dim]`` for one observation), no grad."""
        with torch.no_grad():
            return self.model(_to_tensor(obs, "float32").to(self.device))

    def learn(
        self,
        obs: BatchLike,
        action: BatchLike,
        reward: BatchLike,
        next_obs: BatchLike,
        terminal: BatchLike,
    ) -> torch.Tensor:
        """Take one gradient step on a batch of transitions and return the TD loss (a tensor).

        Shapes as the paddle class's: obs ``[B, *obs_shape]``, integer actions, rewards and
        terminals ``[B]`` or ``[B, 1]``.
        """
        obs, action, reward, next_obs, terminal = self._check_batch(
            obs, action, reward, next_obs, terminal
        )
        with torch.no_grad():
            next_value = self._next_value(next_obs)
            target = reward + (1.0 - terminal) * self.config.gamma * next_value
        q_values = self._q_values(self.model, obs)
        chosen = q_values.gather(1, action.unsqueeze(1)).squeeze(1)
        loss = self._td_loss(chosen, target)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.config.max_grad_norm is not None:
            clip_grad_norm_(self._parameters, self.config.max_grad_norm)
        self.optimizer.step()
        return loss.detach()

    def sync_target(self, decay: float | None = None) -> None:
        """Copy the model into the target model; with ``decay``, a soft (Polyak) update."""
        update_target(self.model, self.target_model, decay=0.0 if decay is None else decay)

    def _next_value(self, next_obs: torch.Tensor) -> torch.Tensor:
        """The bootstrap value ``max_a' Q_target(s', a')``, shape ``[B]``."""
        return self._q_values(self.target_model, next_obs).max(dim=1).values

    def _td_loss(self, chosen: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if self.config.loss == "huber":
            return F.smooth_l1_loss(chosen, target, beta=self.config.huber_delta)
        return F.mse_loss(chosen, target)

    def _q_values(self, model: Model, obs: torch.Tensor) -> torch.Tensor:
        try:
            q_values = model(obs)
        except RuntimeError as exc:
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
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Convert and check a batch, then move it to the device."""
        where = f"{type(self).__name__}.learn"
        obs = as_batch_obs(obs, where)
        next_obs = as_batch_obs(next_obs, where, "next_obs")
        if list(obs.shape) != list(next_obs.shape):
            raise ValueError(
                f"{where} needs obs and next_obs of the same shape [batch, *obs_shape], "
                f"got {list(obs.shape)} and {list(next_obs.shape)}"
            )
        batch = obs.shape[0]
        tensors = (
            obs,
            as_batch_actions(action, batch, where),
            as_batch_vector(reward, batch, "reward", where),
            next_obs,
            as_batch_vector(terminal, batch, "terminal", where),
        )
        obs, action, reward, next_obs, terminal = (
            t.to(self.device, non_blocking=True) for t in tensors
        )
        return obs, action, reward, next_obs, terminal
