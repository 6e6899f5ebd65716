"""The QuickStart policy network (PARL's ``CartpoleModel``): an MLP with a softmax output."""

from __future__ import annotations

import parl

import paddle
import paddle.nn.functional as F


class CartpoleModel(parl.Model):
    """Map CartPole observations to action probabilities.

    Args:
        obs_dim: observation size (4 for CartPole).
        act_dim: number of actions (2 for CartPole).
        hidden_size: width of the hidden layer.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_size: int = 64) -> None:
        super().__init__()
        self.fc1 = paddle.nn.Linear(obs_dim, hidden_size)
        self.fc2 = paddle.nn.Linear(hidden_size, act_dim)

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Return action probabilities ``[B, act_dim]`` for observations ``[B, obs_dim]``."""
        return F.softmax(self.fc2(paddle.tanh(self.fc1(obs))), axis=-1)
