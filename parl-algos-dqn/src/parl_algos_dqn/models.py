"""Q-network building blocks: a dueling head and ready-made MLP Q-networks."""

from __future__ import annotations

from collections.abc import Sequence

from parl.core.paddle import Model
from parl.core.validation import positive_int

import paddle
from paddle import nn

from parl_algos_dqn.config import check_hidden

__all__ = ["DuelingHead", "DuelingQNetwork", "QNetwork"]


def _mlp(in_dim: int, hidden_sizes: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Layer] = []
    for size in hidden_sizes:
        layers += [nn.Linear(in_dim, size), nn.ReLU()]
        in_dim = size
    return nn.Sequential(*layers)


class DuelingHead(nn.Layer):
    """Dueling output layer (Wang et al., 2016): ``Q = V + A - mean_a(A)``.

    Splits the last hidden features into a state value ``V(s)`` and action advantages
    ``A(s, a)``; subtracting the mean advantage makes the split identifiable. Put it on top of
    any feature extractor inside your own :class:`parl.Model`.

    Args:
        hidden_dim: size of the input features.
        act_dim: number of discrete actions.

    Examples:
        >>> head = DuelingHead(hidden_dim=64, act_dim=2)
        >>> list(head(paddle.zeros([8, 64])).shape)
        [8, 2]
    """

    def __init__(self, hidden_dim: int, act_dim: int) -> None:
        super().__init__()
        hidden_dim, act_dim = (
            positive_int("hidden_dim", hidden_dim),
            positive_int("act_dim", act_dim),
        )
        self.value = nn.Linear(hidden_dim, 1)
        self.advantage = nn.Linear(hidden_dim, act_dim)

    def value_and_advantage(self, features: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """Return ``V [B, 1]`` and the raw advantages ``A [B, act_dim]``."""
        return self.value(features), self.advantage(features)

    def forward(self, features: paddle.Tensor) -> paddle.Tensor:
        """Return Q values ``[B, act_dim]`` from features ``[B, hidden_dim]``."""
        value, advantage = self.value_and_advantage(features)
        return value + advantage - advantage.mean(axis=1, keepdim=True)


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

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Return Q values ``[B, act_dim]`` for observations ``[B, obs_dim]``."""
        return self.head(self.body(obs))


class DuelingQNetwork(Model):
    """An MLP trunk with a :class:`DuelingHead`: a ready dueling Q-network for flat observations.

    Args:
        obs_dim: size of a flat observation.
        act_dim: number of discrete actions.
        hidden_sizes: widths of the ReLU hidden layers of the shared trunk.

    Examples:
        >>> from parl_algos_dqn import DQN
        >>> alg = DQN(DuelingQNetwork(obs_dim=4, act_dim=2, hidden_sizes=(128, 128)))
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int] = (64, 64)) -> None:
        super().__init__()
        obs_dim, act_dim = positive_int("obs_dim", obs_dim), positive_int("act_dim", act_dim)
        sizes = check_hidden(type(self).__name__, hidden_sizes)
        self.body = _mlp(obs_dim, sizes)
        self.head = DuelingHead(sizes[-1], act_dim)

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Return Q values ``[B, act_dim]`` for observations ``[B, obs_dim]``."""
        return self.head(self.body(obs))
