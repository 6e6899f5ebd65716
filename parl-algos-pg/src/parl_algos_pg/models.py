"""Actor-critic models for PPO, written once for paddle and torch: separate tanh MLPs with
orthogonal initialisation (CleanRL's).

``DiscretePPOModel`` suits Discrete action spaces (CartPole); ``ContinuousPPOModel`` Box ones
(Pendulum, the MuJoCo tasks), with a state-independent log standard deviation as in the PPO
paper's MuJoCo experiments. ``backend="torch"`` or ``"paddle"`` picks the framework (default
:func:`parl.get_backend`); both build the same layers under the same names (``actor.0.weight``,
..., ``log_std``), so ``parl.core.torch.interop`` moves weights between them.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from parl.core.neutral import Model
from parl.core.ops import Tensor
from parl.core.validation import positive_int

__all__ = ["ContinuousPPOModel", "DiscretePPOModel"]


def _mlp(ops: ModuleType, in_dim: int, out_dim: int, hidden: int, head_gain: float) -> Any:
    """Two tanh hidden layers (orthogonal, gain √2) and a linear head of gain ``head_gain``."""
    return ops.nn.Sequential(
        ops.orthogonal_linear(in_dim, hidden, math.sqrt(2)),
        ops.nn.Tanh(),
        ops.orthogonal_linear(hidden, hidden, math.sqrt(2)),
        ops.nn.Tanh(),
        ops.orthogonal_linear(hidden, out_dim, head_gain),
    )


class DiscretePPOModel(Model):
    """``policy(obs)`` → logits ``[B, act_dim]``; ``value(obs)`` → ``[B]``.

    Args:
        obs_dim: observation size.
        act_dim: number of discrete actions.
        hidden_size: width of the two hidden layers of each network.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self, obs_dim: int, act_dim: int, hidden_size: int = 64, *, backend: str | None = None
    ) -> None:
        super().__init__()
        obs_dim, act_dim = positive_int("obs_dim", obs_dim), positive_int("act_dim", act_dim)
        hidden_size = positive_int("hidden_size", hidden_size)
        self.actor = _mlp(self.ops, obs_dim, act_dim, hidden_size, head_gain=0.01)
        self.critic = _mlp(self.ops, obs_dim, 1, hidden_size, head_gain=1.0)

    def policy(self, obs: Tensor) -> Tensor:
        """Action logits."""
        return self.actor(obs)

    def value(self, obs: Tensor) -> Tensor:
        """State values."""
        return self.critic(obs).squeeze(-1)

    def forward(self, obs: Tensor) -> Tensor:
        """The action logits (what ``save_inference_model`` exports)."""
        return self.actor(obs)


class ContinuousPPOModel(Model):
    """``policy(obs)`` → ``(mean, std)`` with a state-independent ``log_std``; ``value(obs)``.

    Args:
        obs_dim: observation size.
        act_dim: action dimension.
        hidden_size: width of the two hidden layers of each network.
        log_std_init: initial log standard deviation of the Gaussian policy.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_size: int = 64,
        log_std_init: float = 0.0,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        obs_dim, act_dim = positive_int("obs_dim", obs_dim), positive_int("act_dim", act_dim)
        hidden_size = positive_int("hidden_size", hidden_size)
        self.actor = _mlp(self.ops, obs_dim, act_dim, hidden_size, head_gain=0.01)
        self.critic = _mlp(self.ops, obs_dim, 1, hidden_size, head_gain=1.0)
        self.log_std = self.ops.full_parameter([1, act_dim], log_std_init)

    def policy(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        """Mean and standard deviation of the Gaussian policy, both ``[B, act_dim]``."""
        mean = self.actor(obs)
        return mean, self.log_std.exp().expand_as(mean)

    def value(self, obs: Tensor) -> Tensor:
        """State values."""
        return self.critic(obs).squeeze(-1)

    def forward(self, obs: Tensor) -> Tensor:
        """The mean action (what ``save_inference_model`` exports)."""
        return self.actor(obs)
