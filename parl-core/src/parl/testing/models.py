"""Tiny models for tests: small enough to write their losses and updates by hand in numpy."""

from __future__ import annotations

import parl

import paddle

__all__ = ["LinearModel"]


class LinearModel(parl.Model):
    """``forward(obs) = obs @ fc.weight + fc.bias``: one ``paddle.nn.Linear`` named ``fc``.

    Its weights are ``fc.weight`` ``[in_dim, out_dim]`` and ``fc.bias`` ``[out_dim]``; a test
    sets them with ``set_weights`` and computes the expected loss and gradient in numpy.

    Args:
        in_dim: observation size.
        out_dim: output size (logits, Q values, …).
    """

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(in_dim, out_dim)

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        return self.fc(obs)
