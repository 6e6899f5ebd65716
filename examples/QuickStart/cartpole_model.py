"""The QuickStart policy network (PARL's ``CartpoleModel``): an MLP with a softmax output."""

from __future__ import annotations

from parl.core.neutral import Model
from parl.core.ops import Tensor


class CartpoleModel(Model):
    """Map CartPole observations to action probabilities, on paddle or on torch.

    Args:
        obs_dim: observation size (4 for CartPole).
        act_dim: number of actions (2 for CartPole).
        hidden_size: width of the hidden layer.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self, obs_dim: int, act_dim: int, hidden_size: int = 64, *, backend: str | None = None
    ) -> None:
        super().__init__()
        self.fc1 = self.nn.Linear(obs_dim, hidden_size)
        self.fc2 = self.nn.Linear(hidden_size, act_dim)

    def forward(self, obs: Tensor) -> Tensor:
        """Return action probabilities ``[B, act_dim]`` for observations ``[B, obs_dim]``."""
        return self.ops.softmax(self.fc2(self.fc1(obs).tanh()), axis=-1)
