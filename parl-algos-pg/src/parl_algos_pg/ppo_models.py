"""Actor-critic models for PPO: separate tanh MLPs, orthogonal initialisation (CleanRL's).

``DiscretePPOModel`` suits Discrete action spaces (CartPole); ``ContinuousPPOModel`` Box ones
(Pendulum, the MuJoCo tasks), with a state-independent log standard deviation as in the PPO
paper's MuJoCo experiments.
"""

from __future__ import annotations

import math

from parl.core.paddle import Model

import paddle

__all__ = ["ContinuousPPOModel", "DiscretePPOModel"]


def _linear(in_dim: int, out_dim: int, gain: float) -> paddle.nn.Linear:
    return paddle.nn.Linear(
        in_dim,
        out_dim,
        weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Orthogonal(gain)),
        bias_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.0)),
    )


def _mlp(in_dim: int, out_dim: int, hidden: int, head_gain: float) -> paddle.nn.Sequential:
    return paddle.nn.Sequential(
        _linear(in_dim, hidden, math.sqrt(2)),
        paddle.nn.Tanh(),
        _linear(hidden, hidden, math.sqrt(2)),
        paddle.nn.Tanh(),
        _linear(hidden, out_dim, head_gain),
    )


class DiscretePPOModel(Model):
    """``policy(obs)`` → logits ``[B, act_dim]``; ``value(obs)`` → ``[B]``.

    Args:
        obs_dim: observation size.
        act_dim: number of discrete actions.
        hidden_size: width of the two hidden layers of each network.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_size: int = 64) -> None:
        super().__init__()
        self.actor = _mlp(obs_dim, act_dim, hidden_size, head_gain=0.01)
        self.critic = _mlp(obs_dim, 1, hidden_size, head_gain=1.0)

    def policy(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Action logits."""
        return self.actor(obs)

    def value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """State values."""
        return self.critic(obs).squeeze(-1)

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        """The action logits (what ``save_inference_model`` exports)."""
        return self.actor(obs)


class ContinuousPPOModel(Model):
    """``policy(obs)`` → ``(mean, std)`` with a state-independent ``log_std``; ``value(obs)``.

    Args:
        obs_dim: observation size.
        act_dim: action dimension.
        hidden_size: width of the two hidden layers of each network.
        log_std_init: initial log standard deviation of the Gaussian policy.
    """

    def __init__(
        self, obs_dim: int, act_dim: int, hidden_size: int = 64, log_std_init: float = 0.0
    ) -> None:
        super().__init__()
        self.actor = _mlp(obs_dim, act_dim, hidden_size, head_gain=0.01)
        self.critic = _mlp(obs_dim, 1, hidden_size, head_gain=1.0)
        self.log_std = self.create_parameter(
            [1, act_dim], default_initializer=paddle.nn.initializer.Constant(log_std_init)
        )

    def policy(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """Mean and standard deviation of the Gaussian policy, both ``[B, act_dim]``."""
        mean = self.actor(obs)
        return mean, paddle.exp(self.log_std).expand_as(mean)

    def value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """State values."""
        return self.critic(obs).squeeze(-1)

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        """The mean action (what ``save_inference_model`` exports)."""
        return self.actor(obs)
