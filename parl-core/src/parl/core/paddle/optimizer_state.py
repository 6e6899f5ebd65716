"""A paddle optimizer's state as named arrays that survive a restart.

``Optimizer.state_dict()`` keys its tensors by paddle's process-wide unique names
(``linear_3.w_0_moment1_2``), which a fresh process or a second agent in the same process
numbers differently, and it is empty until the first step. Here the state is keyed by names the
caller gives each parameter (``model/fc1.weight``) and by the accumulator's own name
(``moment1``), and the accumulators are created up front, so that a checkpoint holds the whole
state from the first step on and loads into any optimizer over the same parameters.

This module reads and creates accumulators through the optimizer's ``_accumulators``,
``_master_weights`` and ``_create_accumulators``: paddle has no public API for either, and
these have been stable since paddle 2.0 (``parl-core/tests/test_checkpoint.py`` checks them
for Adam, multi-tensor Adam, SGD with momentum, RMSProp and learning-rate schedulers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from parl.core.errors import CheckpointError
from parl.core.paddle.tensors import numpy_dtype
from parl.core.weights import CHECKPOINT_HINT, check_weights

import numpy as np
import paddle

__all__ = ["optimizer_state", "plan_optimizer_restore"]

_MASTER_WEIGHT = "master_weight"


def _create_accumulators(optimizer: paddle.optimizer.Optimizer) -> None:
    """Create every accumulator now instead of at the first step (same initial values)."""
    block = paddle.static.default_main_program().global_block()
    groups = optimizer._param_groups
    if groups and isinstance(groups[0], dict):
        for group in groups:
            trainable = [p for p in group["params"] if not p.stop_gradient]
            optimizer._create_accumulators(block, {**group, "params": trainable})
    else:
        optimizer._create_accumulators(block, [p for p in groups if not p.stop_gradient])


def _state_tensors(
    optimizer: paddle.optimizer.Optimizer, names: Mapping[int, str], owner: str
) -> dict[str, paddle.Tensor]:
    _create_accumulators(optimizer)
    groups = optimizer._param_groups
    params = (
        [p for g in groups for p in g["params"]]
        if groups and isinstance(groups[0], dict)
        else groups
    )
    by_paddle_name = {}
    for param in params:
        if id(param) not in names:
            raise CheckpointError(
                f"optimizer {owner!r} updates a parameter ({param.name}, shape "
                f"{list(param.shape)}) that is in no model of the algorithm and not declared in "
                "its checkpoint_state; declare the attribute holding it"
            )
        by_paddle_name[param.name] = names[id(param)]
    tensors = {}
    for accumulator, per_param in optimizer._accumulators.items():
        for paddle_name, tensor in per_param.items():
            if paddle_name in by_paddle_name:
                tensors[f"{by_paddle_name[paddle_name]}/{accumulator}"] = tensor
    for paddle_name, tensor in optimizer._master_weights.items():
        if paddle_name in by_paddle_name:
            tensors[f"{by_paddle_name[paddle_name]}/{_MASTER_WEIGHT}"] = tensor
    return tensors


def _schedule(optimizer: paddle.optimizer.Optimizer) -> Any:
    rate = optimizer._learning_rate
    return rate if isinstance(rate, paddle.optimizer.lr.LRScheduler) else None


def optimizer_state(
    optimizer: paddle.optimizer.Optimizer, names: Mapping[int, str], owner: str
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Return ``optimizer``'s accumulators as arrays and its learning rate as JSON.

    Args:
        optimizer: the optimizer.
        names: ``id(parameter)`` to the stable name of every parameter it may update.
        owner: the optimizer's name, for messages.

    Returns:
        ``(arrays, info)``: arrays keyed ``"<parameter name>/<accumulator>"``; ``info`` holds
        ``lr`` (the current rate) and ``lr_scheduler`` (its state dict, or ``None``).
    """
    arrays = {
        key: tensor.numpy() for key, tensor in _state_tensors(optimizer, names, owner).items()
    }
    schedule = _schedule(optimizer)
    info = {
        "lr": float(optimizer.get_lr()),
        "lr_scheduler": schedule.state_dict() if schedule is not None else None,
    }
    return arrays, info


def _check_schedule_state(schedule: Any, saved: Any, owner: str) -> None:
    """Check a saved scheduler state has the scheduler's own keys, each a number or None."""
    expected = sorted(schedule.state_dict())
    if not isinstance(saved, dict) or sorted(saved) != expected:
        found = sorted(saved) if isinstance(saved, dict) else type(saved).__name__
        raise CheckpointError(
            f"the checkpoint's learning-rate scheduler state for optimizer {owner!r} holds "
            f"{found}, expected {expected}"
        )
    for key, value in saved.items():
        if value is not None and type(value) not in (int, float):
            raise CheckpointError(
                f"the checkpoint's learning-rate scheduler state for optimizer {owner!r} has "
                f"{key} = {value!r}, not a number"
            )


def plan_optimizer_restore(
    optimizer: paddle.optimizer.Optimizer,
    names: Mapping[int, str],
    owner: str,
    arrays: Mapping[str, np.ndarray],
    info: Mapping[str, Any],
) -> Callable[[], None]:
    """Check a saved optimizer state against ``optimizer``; return a function that applies it.

    Nothing is changed before the returned function is called (creating the optimizer's
    accumulators ahead of its first step changes no value it will use).

    Raises:
        CheckpointError: the saved accumulators, their shapes or the learning-rate kind do not
            fit ``optimizer``.
    """
    tensors = _state_tensors(optimizer, names, owner)
    try:
        values = check_weights(
            {key: (tuple(t.shape), numpy_dtype(t)) for key, t in tensors.items()},
            arrays,
            f"optimizer {owner!r}",
            CHECKPOINT_HINT,
        )
    except ValueError as exc:
        raise CheckpointError(str(exc)) from exc
    schedule = _schedule(optimizer)
    saved_schedule = info.get("lr_scheduler")
    if (schedule is None) != (saved_schedule is None):
        have = "a learning-rate scheduler" if schedule is not None else "a fixed learning rate"
        raise CheckpointError(
            f"optimizer {owner!r} has {have}, but the checkpoint's optimizer had not; build the "
            "optimizer as the saved run did"
        )
    if schedule is None and type(info.get("lr")) not in (int, float):
        raise CheckpointError(f"the checkpoint gives optimizer {owner!r} no learning rate")
    if schedule is not None:
        _check_schedule_state(schedule, saved_schedule, owner)

    def apply() -> None:
        with paddle.no_grad():
            for key, tensor in tensors.items():
                tensor.set_value(values[key])
        if schedule is not None:
            schedule.set_state_dict(dict(saved_schedule or {}))
        else:
            optimizer.set_lr(float(info["lr"]))

    return apply
