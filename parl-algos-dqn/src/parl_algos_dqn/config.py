"""The hyperparameters of DQN and DDQN, shared by the paddle and the torch implementation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from parl.core.config import AlgorithmConfig
from parl.core.validation import positive_int

from pydantic import Field, PositiveFloat

__all__ = ["DQNConfig", "check_hidden"]


class DQNConfig(AlgorithmConfig):
    """Hyperparameters of :class:`DQN` (and :class:`~parl_algos_dqn.ddqn.DDQN`)."""

    gamma: float = Field(default=0.99, gt=0.0, le=1.0)
    """Discount factor of future rewards, in (0, 1]."""

    lr: PositiveFloat = 1e-3
    """Learning rate of the Adam optimizer of the Q-network."""

    loss: Literal["mse", "huber"] = "mse"
    """The TD loss, "mse" (mean squared error, PARL's default) or "huber" (smooth L1)."""

    huber_delta: PositiveFloat = 1.0
    """Where the Huber loss turns from quadratic to linear; used only with loss="huber"."""

    max_grad_norm: PositiveFloat | None = None
    """Clip the global gradient norm to this value before each step; None disables clipping."""


def check_hidden(owner: str, hidden_sizes: Sequence[int]) -> tuple[int, ...]:
    """The hidden-layer widths of a Q-network, checked: at least one, each a positive int."""
    sizes = tuple(hidden_sizes)
    if not sizes:
        raise ValueError(
            f"{owner}: hidden_sizes must name at least one layer, got {hidden_sizes!r}"
        )
    return tuple(positive_int(f"hidden_sizes[{i}]", size) for i, size in enumerate(sizes))
