"""Tiny models for tests: small enough to write their losses and updates by hand in numpy."""

from __future__ import annotations

from parl.core.neutral import Model
from parl.core.ops import Tensor

__all__ = ["LinearModel"]


class LinearModel(Model):
    """``forward(obs) = obs @ W + b``: one ``Linear`` layer named ``fc``, on either framework.

    On paddle its weights are ``fc.weight`` ``[in_dim, out_dim]`` and ``fc.bias``
    ``[out_dim]``; a test sets them with ``set_weights`` and computes the expected loss and
    gradient in numpy. (torch stores ``fc.weight`` transposed, ``[out_dim, in_dim]``.)

    Args:
        in_dim: observation size.
        out_dim: output size (logits, Q values, …).
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(self, in_dim: int, out_dim: int, *, backend: str | None = None) -> None:
        super().__init__()
        self.fc = self.nn.Linear(in_dim, out_dim)

    def forward(self, obs: Tensor) -> Tensor:
        return self.fc(obs)
