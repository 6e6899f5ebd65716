"""The paddle :class:`~parl.core.backend.Backend`: what checkpoints need from paddle."""

from __future__ import annotations

from parl.core.backend import Backend
from parl.core.paddle.optimizer_state import optimizer_state, plan_optimizer_restore
from parl.core.paddle.rng import capture_rng, plan_rng
from parl.core.paddle.tensors import assign, numpy_dtype, to_numpy

import paddle

__all__ = ["BACKEND"]


def _seed(seed: int) -> None:
    paddle.seed(seed)


BACKEND = Backend(
    name="paddle",
    tensor_type=paddle.Tensor,
    optimizer_type=paddle.optimizer.Optimizer,
    to_numpy=to_numpy,
    numpy_dtype=numpy_dtype,
    assign=assign,
    optimizer_state=optimizer_state,
    plan_optimizer_restore=plan_optimizer_restore,
    capture_rng=capture_rng,
    plan_rng=plan_rng,
    seed=_seed,
)
