"""Actor-critic models for IMPALA: an MLP for vector observations, a small CNN for Atari."""

from __future__ import annotations

import parl

import paddle


class MLPModel(parl.Model):
    """``policy(obs)`` → logits ``[B, act_dim]``; ``value(obs)`` → ``[B]``; one shared torso.

    Args:
        obs_dim: observation size.
        act_dim: number of discrete actions.
        hidden_size: width of the two hidden layers.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_size: int = 64) -> None:
        super().__init__()
        self.torso = paddle.nn.Sequential(
            paddle.nn.Linear(obs_dim, hidden_size),
            paddle.nn.Tanh(),
            paddle.nn.Linear(hidden_size, hidden_size),
            paddle.nn.Tanh(),
        )
        self.policy_head = paddle.nn.Linear(hidden_size, act_dim)
        self.value_head = paddle.nn.Linear(hidden_size, 1)

    def policy(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Action logits."""
        return self.policy_head(self.torso(obs))

    def value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """State values."""
        return self.value_head(self.torso(obs)).squeeze(-1)


class AtariModel(parl.Model):
    """PARL's IMPALA Atari network, for stacked ``[4, 42, 42]`` uint8 frames (NCHW).

    Three convolutions and one hidden layer shared by the policy and value heads.

    Args:
        act_dim: number of discrete actions.
    """

    def __init__(self, act_dim: int) -> None:
        super().__init__()
        self.conv = paddle.nn.Sequential(
            paddle.nn.Conv2D(4, 32, 5, stride=1, padding=2),
            paddle.nn.ReLU(),
            paddle.nn.MaxPool2D(2),
            paddle.nn.Conv2D(32, 32, 5, stride=1, padding=2),
            paddle.nn.ReLU(),
            paddle.nn.MaxPool2D(2),
            paddle.nn.Conv2D(32, 64, 4, stride=1, padding=1),
            paddle.nn.ReLU(),
            paddle.nn.MaxPool2D(2),
            paddle.nn.Flatten(),
            paddle.nn.Linear(64 * 4 * 4, 256),
            paddle.nn.ReLU(),
        )
        self.policy_head = paddle.nn.Linear(256, act_dim)
        self.value_head = paddle.nn.Linear(256, 1)

    def policy(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Action logits."""
        return self.policy_head(self.conv(obs / 255.0))

    def value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """State values."""
        return self.value_head(self.conv(obs / 255.0)).squeeze(-1)
