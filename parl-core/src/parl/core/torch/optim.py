"""Optimisation helpers shared by torch algorithms."""

from __future__ import annotations

from collections.abc import Iterable

import torch

__all__ = ["clip_grad_norm_"]


def clip_grad_norm_(parameters: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale gradients in place so that their global L2 norm is at most ``max_norm``.

    torch's own ``clip_grad_norm_`` (fused per device), with the paddle helper's check of
    ``max_norm``. Call it between ``loss.backward()`` and ``optimizer.step()``.

    Returns:
        The global norm before clipping, as a scalar tensor.
    """
    if not max_norm > 0:
        raise ValueError(f"max_norm must be > 0, got {max_norm}")
    return torch.nn.utils.clip_grad_norm_(list(parameters), max_norm)
