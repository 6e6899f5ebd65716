"""PPO's actor-critic models on torch: the layers of :mod:`parl_algos_pg.ppo_models`, same names.

A torch model and a paddle one built with the same sizes have the same weight names
(``actor.0.weight``, ..., ``log_std``), so ``parl.core.torch.interop`` moves weights between
them. Initialisation as the paddle models: orthogonal with CleanRL's gains, zero biases.
"""

from __future__ import annotations

import math

from parl.core.torch import Model

import torch
from torch import nn

__all__ = ["ContinuousPPOModel", "DiscretePPOModel"]


def _linear(in_dim: int, out_dim: int, gain: float) -> nn.Linear:
    layer = nn.Linear(in_dim, out_dim)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def _mlp(in_dim: int, out_dim: int, hidden: int, head_gain: float) -> nn.Sequential:
    return nn.Sequential(
        _linear(in_dim, hidden, math.sqrt(2)),
        nn.Tanh(),
        _linear(hidden, hidden, math.sqrt(2)),
        nn.Tanh(),
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

    def policy(self, obs: torch.Tensor) -> torch.Tensor:
        """Action logits."""
        logits: torch.Tensor = self.actor(obs)
        return logits

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """State values."""
        value: torch.Tensor = self.critic(obs)
        return value.squeeze(-1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The action logits."""
        return self.policy(obs)


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
        self.log_std = nn.Parameter(torch.full((1, act_dim), float(log_std_init)))

    def policy(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and standard deviation of the Gaussian policy, both ``[B, act_dim]``."""
        mean: torch.Tensor = self.actor(obs)
        return mean, torch.exp(self.log_std).expand_as(mean)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """State values."""
        value: torch.Tensor = self.critic(obs)
        return value.squeeze(-1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The mean action."""
        mean: torch.Tensor = self.actor(obs)
        return mean
