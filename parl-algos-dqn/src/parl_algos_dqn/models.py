"""Q-networks written once for paddle and torch: a dueling head and ready-made MLP Q-networks.

``QNetwork(4, 2)`` is a network of the selected framework (:func:`parl.get_backend`);
``backend="torch"`` or ``"paddle"`` picks one. Both build the same layers under the same names
(``body.0.weight``, ``head.weight``, ...), so ``parl.core.torch.interop`` moves weights between
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parl.core.neutral import Model
from parl.core.ops import Tensor
from parl.core.validation import positive_int

__all__ = ["DuelingHead", "DuelingQNetwork", "QNetwork", "check_hidden"]


def check_hidden(owner: str, hidden_sizes: Sequence[int]) -> tuple[int, ...]:
    """The hidden-layer widths of a Q-network, checked: at least one, each a positive int."""
    sizes = tuple(hidden_sizes)
    if not sizes:
        raise ValueError(
            f"{owner}: hidden_sizes must name at least one layer, got {hidden_sizes!r}"
        )
    return tuple(positive_int(f"hidden_sizes[{i}]", size) for i, size in enumerate(sizes))


def _mlp(nn: Any, in_dim: int, hidden_sizes: Sequence[int]) -> Any:
    layers = []
    for size in hidden_sizes:
        layers += [nn.Linear(in_dim, size), nn.ReLU()]
        in_dim = size
    return nn.Sequential(*layers)


class DuelingHead(Model):
    """Dueling output layer (Wang et al., 2016): ``Q = V + A - mean_a(A)``.

    Splits the last hidden features into a state value ``V(s)`` and action advantages
    ``A(s, a)``; subtracting the mean advantage makes the split identifiable. Put it on top of
    any feature extractor inside your own :class:`parl.Model` of the same framework.

    Args:
        hidden_dim: size of the input features.
        act_dim: number of discrete actions.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.

    Examples:
        >>> import paddle
        >>> head = DuelingHead(hidden_dim=64, act_dim=2, backend="paddle")
        >>> list(head(paddle.zeros([8, 64])).shape)
        [8, 2]
    """

    def __init__(self, hidden_dim: int, act_dim: int, *, backend: str | None = None) -> None:
        super().__init__()
        hidden_dim, act_dim = (
            positive_int("hidden_dim", hidden_dim),
            positive_int("act_dim", act_dim),
        )
        self.value = self.nn.Linear(hidden_dim, 1)
        self.advantage = self.nn.Linear(hidden_dim, act_dim)

    def value_and_advantage(self, features: Tensor) -> tuple[Tensor, Tensor]:
        """Return ``V [B, 1]`` and the raw advantages ``A [B, act_dim]``."""
        return self.value(features), self.advantage(features)

    def forward(self, features: Tensor) -> Tensor:
        """Return Q values ``[B, act_dim]`` from features ``[B, hidden_dim]``."""
        value, advantage = self.value_and_advantage(features)
        return value + advantage - self.ops.mean(advantage, axis=-1, keepdim=True)


class QNetwork(Model):
    """An MLP mapping flat observations to one Q value per discrete action.

    Args:
        obs_dim: size of a flat observation.
        act_dim: number of discrete actions.
        hidden_sizes: widths of the ReLU hidden layers.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (64, 64),
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        obs_dim, act_dim = positive_int("obs_dim", obs_dim), positive_int("act_dim", act_dim)
        sizes = check_hidden(type(self).__name__, hidden_sizes)
        self.body = _mlp(self.nn, obs_dim, sizes)
        self.head = self.nn.Linear(sizes[-1], act_dim)

    def forward(self, obs: Tensor) -> Tensor:
        """Return Q values ``[B, act_dim]`` for observations ``[B, obs_dim]``."""
        return self.head(self.body(obs))


class DuelingQNetwork(Model):
    """An MLP trunk with a :class:`DuelingHead`: a ready dueling Q-network for flat observations.

    Args:
        obs_dim: size of a flat observation.
        act_dim: number of discrete actions.
        hidden_sizes: widths of the ReLU hidden layers of the shared trunk.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.

    Examples:
        >>> from parl_algos_dqn import DQN
        >>> alg = DQN(DuelingQNetwork(obs_dim=4, act_dim=2, hidden_sizes=(128, 128)))
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (64, 64),
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        obs_dim, act_dim = positive_int("obs_dim", obs_dim), positive_int("act_dim", act_dim)
        sizes = check_hidden(type(self).__name__, hidden_sizes)
        self.body = _mlp(self.nn, obs_dim, sizes)
        self.head = DuelingHead(sizes[-1], act_dim, backend=self.backend_name)

    def forward(self, obs: Tensor) -> Tensor:
        """Return Q values ``[B, act_dim]`` for observations ``[B, obs_dim]``."""
        return self.head(self.body(obs))
