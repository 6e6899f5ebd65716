"""Weights as numpy arrays by name: checked in full before anything is written, on any backend.

``Model.set_weights``, ``Agent.restore``, checkpoints and target-network updates of both
backends go through these functions, so names, shapes and value types are checked once, the
same way, with the same messages. This module imports neither framework: tensors are turned
into arrays by the caller's :class:`~parl.core.backend.Backend`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from parl.core.errors import WeightsMismatchError

import numpy as np

if TYPE_CHECKING:
    from parl.core.backend import Backend

__all__ = [
    "CHECKPOINT_HINT",
    "WEIGHTS_HINT",
    "check_decay",
    "check_weights",
    "load_weights",
    "state_pairs",
]

Shape = tuple[int, ...]
# Array kinds that can be weights: bool, signed and unsigned ints, floats.
_NUMBER_KINDS = "biuf"

WEIGHTS_HINT = "pass the dict returned by get_weights() of the same architecture"
CHECKPOINT_HINT = "the file was written by an agent built differently"


def check_weights(
    expected: Mapping[str, tuple[Shape, np.dtype]],
    given: Mapping[str, Any],
    owner: str,
    hint: str = WEIGHTS_HINT,
    backend: Backend | None = None,
) -> dict[str, np.ndarray]:
    """Check ``given`` against ``expected`` and return its arrays cast to the expected dtypes.

    Everything is checked before anything is returned, so a caller that writes only after this
    returns never applies half of a bad dict.

    Args:
        expected: entry name to the shape and numpy dtype it must have.
        given: entry name to an array, a tensor of ``backend`` or anything ``numpy.asarray``
            takes.
        owner: what the weights are for, used in messages (e.g. ``"CartpoleModel"``).
        hint: how to fix a name mismatch, appended to its message.
        backend: converts the backend's tensors among ``given``.

    Raises:
        WeightsMismatchError: a name is missing or unexpected, a value is not numeric (a string
            or object array), or a shape differs.
    """
    missing = sorted(set(expected) - set(given))
    unexpected = sorted(set(given) - set(expected))
    if missing or unexpected:
        raise WeightsMismatchError(
            f"weights for {owner} do not match its parameters: missing {missing}, "
            f"unexpected {unexpected}; {hint}"
        )
    arrays = {}
    for name, (shape, dtype) in expected.items():
        value = given[name]
        if backend is not None and isinstance(value, backend.tensor_type):
            array = backend.to_numpy(value)
        else:
            array = np.asarray(value)
        if array.dtype.kind not in _NUMBER_KINDS:
            raise WeightsMismatchError(
                f"weight {name!r} of {owner} holds {array.dtype} values; weights must be "
                "numbers (bool, int or float arrays)"
            )
        if tuple(array.shape) != tuple(shape):
            raise WeightsMismatchError(
                f"weight {name!r} of {owner} has shape {tuple(array.shape)}, expected "
                f"{tuple(shape)}"
            )
        arrays[name] = array.astype(dtype, copy=False)
    return arrays


def load_weights(
    state: Mapping[str, Any], weights: Mapping[str, Any], owner: str, backend: Backend
) -> None:
    """Check ``weights`` against the tensors of ``state`` in full, then write them in place.

    Raises:
        WeightsMismatchError: see :func:`check_weights`; nothing is written then.
    """
    arrays = check_weights(
        {name: (tuple(t.shape), backend.numpy_dtype(t)) for name, t in state.items()},
        weights,
        owner,
        backend=backend,
    )
    for name, tensor in state.items():
        backend.assign(tensor, arrays[name])


def check_decay(decay: float) -> float:
    """Return ``decay`` as a float if it lies in ``[0, 1]`` (a target update's weight)."""
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"decay must be in [0, 1], got {decay}")
    return float(decay)


def state_pairs(
    source: Mapping[str, Any], target: Mapping[str, Any], source_name: str, target_name: str
) -> list[tuple[Any, Any]]:
    """Pair the entries of two state dicts by name, checking names and shapes first.

    Raises:
        WeightsMismatchError: the names or a shape differ.
    """
    if source.keys() != target.keys():
        raise WeightsMismatchError(
            f"target {target_name} does not match {source_name}: missing "
            f"{sorted(set(source) - set(target))}, unexpected {sorted(set(target) - set(source))}"
        )
    for name, tensor in source.items():
        if tuple(tensor.shape) != tuple(target[name].shape):
            raise WeightsMismatchError(
                f"target entry {name!r} has shape {list(target[name].shape)}, the source's has "
                f"{list(tensor.shape)}"
            )
    return [(tensor, target[name]) for name, tensor in source.items()]
