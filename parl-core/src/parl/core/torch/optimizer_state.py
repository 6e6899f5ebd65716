"""A torch optimizer's state as named arrays that survive a restart, checked before loading.

``Optimizer.state_dict()`` keys its state by each parameter's position in the optimizer, which
says nothing a reader can check. Here every slot is keyed by the name the caller gives the
parameter and the slot's own name (``models/model/fc1.weight/exp_avg``), the parameter groups'
hyperparameters (learning rate, betas, ...) go to JSON, and loading goes through
``Optimizer.load_state_dict`` (which casts the state to each parameter's dtype and device)
only after every slot's shape and every hyperparameter's type has been checked.

torch creates a parameter's slots at its first step, so a checkpoint taken before any step
holds none; loading it into an optimizer that has stepped clears that optimizer's slots.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from parl.core.errors import CheckpointError

import numpy as np
import torch

__all__ = ["optimizer_state", "plan_optimizer_restore"]

_JSON_SCALARS = (bool, int, float, type(None))


def _named_parameters(
    optimizer: torch.optim.Optimizer, names: Mapping[int, str], owner: str
) -> list[str]:
    """The stable name of every parameter, in the optimizer's own order."""
    ordered = []
    for group in optimizer.param_groups:
        for param in group["params"]:
            if id(param) not in names:
                raise CheckpointError(
                    f"optimizer {owner!r} updates a parameter (shape {list(param.shape)}) that "
                    "is in no model of the algorithm and not declared in its checkpoint_state; "
                    "declare the attribute holding it"
                )
            ordered.append(names[id(param)])
    return ordered


def _json_value(value: Any, where: str) -> Any:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, _JSON_SCALARS):
        return value
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, float)) for v in value):
        return list(value)
    raise CheckpointError(f"{where} is a {type(value).__name__}, which a checkpoint cannot hold")


def optimizer_state(
    optimizer: torch.optim.Optimizer, names: Mapping[int, str], owner: str
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Return ``optimizer``'s slots as arrays and its hyperparameters and scalar slots as JSON.

    Args:
        optimizer: the optimizer.
        names: ``id(parameter)`` to the stable name of every parameter it may update.
        owner: the optimizer's name, for messages.

    Returns:
        ``(arrays, info)``: tensor slots keyed ``"<parameter name>/<slot>"``; ``info`` holds
        ``param_groups`` (each group's hyperparameters) and ``scalars`` (slots that are not
        tensors, such as an SGD momentum buffer of ``None``).
    """
    ordered = _named_parameters(optimizer, names, owner)
    state = optimizer.state_dict()
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for index, slots in state["state"].items():
        name = ordered[index]
        for slot, value in slots.items():
            if isinstance(value, torch.Tensor):
                arrays[f"{name}/{slot}"] = value.detach().cpu().numpy()
            else:
                scalars.setdefault(name, {})[slot] = _json_value(value, f"{owner} {name}/{slot}")
    groups = [
        {k: _json_value(v, f"{owner} group {i} {k}") for k, v in group.items() if k != "params"}
        for i, group in enumerate(state["param_groups"])
    ]
    return arrays, {"param_groups": groups, "scalars": scalars}


def _check_group(saved: Any, current: Mapping[str, Any], where: str) -> None:
    expected = sorted(k for k in current if k != "params")
    if not isinstance(saved, dict) or sorted(saved) != expected:
        found = sorted(saved) if isinstance(saved, dict) else type(saved).__name__
        raise CheckpointError(f"{where} holds {found}, expected {expected}")
    for key, value in saved.items():
        now = _json_value(current[key], f"{where} {key}")
        numbers = (int, float)
        same = (
            (isinstance(now, bool) and isinstance(value, bool))
            or (now is None and value is None)
            or (
                isinstance(now, numbers)
                and not isinstance(now, bool)
                and isinstance(value, numbers)
                and not isinstance(value, bool)
            )
            or (
                isinstance(now, list)
                and isinstance(value, list)
                and len(now) == len(value)
                and all(isinstance(v, numbers) and not isinstance(v, bool) for v in value)
            )
        )
        if not same:
            raise CheckpointError(f"{where}: {key} is {value!r}, where this optimizer has {now!r}")


def plan_optimizer_restore(
    optimizer: torch.optim.Optimizer,
    names: Mapping[int, str],
    owner: str,
    arrays: Mapping[str, np.ndarray],
    info: Mapping[str, Any],
) -> Callable[[], None]:
    """Check a saved optimizer state against ``optimizer``; return a function that applies it.

    Raises:
        CheckpointError: a slot names an unknown parameter, has the wrong shape or kind, or
            the parameter groups differ in number, keys or value types.
    """
    ordered = _named_parameters(optimizer, names, owner)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    index_of = {name: i for i, name in enumerate(ordered)}
    saved_groups = info.get("param_groups")
    scalars = info.get("scalars")
    if not isinstance(saved_groups, list) or len(saved_groups) != len(optimizer.param_groups):
        raise CheckpointError(
            f"optimizer {owner!r} has {len(optimizer.param_groups)} parameter group(s), but the "
            "checkpoint's has a different number; build the optimizer as the saved run did"
        )
    for i, (saved, group) in enumerate(zip(saved_groups, optimizer.param_groups, strict=True)):
        _check_group(saved, group, f"the checkpoint's parameter group {i} of optimizer {owner!r}")
    if not isinstance(scalars, dict):
        raise CheckpointError(f"the checkpoint gives optimizer {owner!r} no scalar slots")
    state: dict[int, dict[str, Any]] = {}
    for key, array in arrays.items():
        name, _, slot = key.rpartition("/")
        if name not in index_of:
            raise CheckpointError(
                f"the checkpoint holds optimizer state {key!r} for a parameter that optimizer "
                f"{owner!r} does not update"
            )
        param = params[index_of[name]]
        if array.shape not in (tuple(param.shape), ()) or array.dtype.kind not in "biuf":
            raise CheckpointError(
                f"optimizer {owner!r} slot {key!r} has shape {array.shape} ({array.dtype}); a "
                f"slot is a number or numbers shaped as the parameter, {tuple(param.shape)}"
            )
        state.setdefault(index_of[name], {})[slot] = torch.from_numpy(array.copy())
    for name, slots in scalars.items():
        if name not in index_of or not isinstance(slots, dict):
            raise CheckpointError(f"the checkpoint's optimizer {owner!r} names {name!r} wrongly")
        for slot, value in slots.items():
            if not isinstance(value, _JSON_SCALARS):
                raise CheckpointError(f"optimizer {owner!r} slot {name}/{slot} is {value!r}")
            state.setdefault(index_of[name], {})[slot] = value
    current = optimizer.state_dict()
    groups = [
        {**saved, "params": group["params"]}
        for saved, group in zip(saved_groups, current["param_groups"], strict=True)
    ]
    # Type-checked above: lists go back to the tuples the optimizer holds (betas).
    for group, now in zip(groups, current["param_groups"], strict=True):
        for key, value in now.items():
            if isinstance(value, tuple):
                group[key] = tuple(group[key])

    def apply() -> None:
        optimizer.load_state_dict({"state": state, "param_groups": groups})

    return apply
