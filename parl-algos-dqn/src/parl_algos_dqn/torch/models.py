"""Q-networks on torch: the layers of :mod:`parl_algos_dqn.models`, with the same names.

A torch ``QNetwork`` and a paddle one built with the same sizes have the same weight names
(``body.0.weight``, ``head.weight``, ...), so ``parl.core.torch.interop`` moves weights
between them.
"""

from __future__ import annotations

from collections.abc import Sequence

from parl.core.torch import Model
from parl.core.validation import positive_int

import torch
from torch import nn

from parl_algos_dqn.config import check_hidden

__all__ = ["DuelingHead", "DuelingQNetwork", "QNetwork"]


def _mlp(in_dim: int, hidden_sizes: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for size in hidden_sizes:
        layers += [nn.Linear(in_dim, size), nn.ReLU()]
        in_dim = size
    return nn.Sequential(*layers)


class DuelingHead(nn.Module):
    """Dueling output layer (Wang et al., 2016): ``Q = V + A - mean_a(A)``.

    Args:
        hidden_dim: size of the input features.
        act_dim: number of discrete actions.
    """

    def __init__(self, hidden_dim: int, act_dim: int) -> None:
        super().__init__()
        hidden_dim, act_dim = (
            positive_int("hidden_dim", hidden_dim),
            positive_int("act_dim", act_dim),
        )
        self.value = nn.Linear(hidden_dim, 1)
        self.advantage = nn.Linear(hidden_dim, act_dim)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Return Q values ``[B, act_dim]`` from features ``[B, hidden_dim]``."""
        advantage = self.advantage(features)
        return self.value(features) + advantage - advantage.mean(dim=-1, keepdim=True)


class QNetwork(Model):
    """An MLP mapping flat observations to one Q value per discrete action.

    Args:
        obs_dim: size of a flat observation.
        act_dim: number of discrete actions.
        hidden_sizes: widths of the ReLU hidden layers.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int] = (64, 64)) -> None:
        super().__init__()
        obs_dim, act_dim = positive_int("obs_dim", obs_dim), positive_int("act_dim", act_dim)
        sizes = check_hidden(type(self).__name__, hidden_sizes)
        self.body = _mlp(obs_dim, sizes)
        self.head = nn.Linear(sizes[-1], act_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Return Q values ``[B, act_dim]`` for observations ``[B, obs_dim]``."""
        return self.head(self.body(obs))


class DuelingQNetwork(Model):
    """An MLP trunk with a :class:`DuelingHead`: a ready dueling Q-network for flat observations.

    Args:
        obs_dim: size of a flat observation.
        act_dim: number of discrete actions.
        hidden_sizes: widths of the ReLU hidden layers of the shared trunk.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int] = (64, 64)) -> None:
        super().__init__()
        obs_dim, act_dim = positive_int("obs_dim", obs_dim), positive_int("act_dim", act_dim)
        sizes = check_hidden(type(self).__name__, hidden_sizes)
        self.body = _mlp(obs_dim, sizes)
        self.head = DuelingHead(sizes[-1], act_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Return Q values ``[B, act_dim]`` for observations ``[B, obs_dim]``."""
        return self.head(self.body(obs))
