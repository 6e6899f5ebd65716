"""The torch :class:`~parl.core.backend.Backend`: what checkpoints need from torch."""

from __future__ import annotations

from parl.core.backend import Backend
from parl.core.torch.optimizer_state import optimizer_state, plan_optimizer_restore
from parl.core.torch.rng import capture_rng, plan_rng
from parl.core.torch.tensors import assign, numpy_dtype, to_numpy

import torch

__all__ = ["BACKEND"]


def _seed(seed: int) -> None:
    torch.manual_seed(seed)  # every device's generator


BACKEND = Backend(
    name="torch",
    tensor_type=torch.Tensor,
    optimizer_type=torch.optim.Optimizer,
    to_numpy=to_numpy,
    numpy_dtype=numpy_dtype,
    assign=assign,
    optimizer_state=optimizer_state,
    plan_optimizer_restore=plan_optimizer_restore,
    capture_rng=capture_rng,
    plan_rng=plan_rng,
    seed=_seed,
)
