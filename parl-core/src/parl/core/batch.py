"""Batch conversion and checks for ``learn`` methods: clear errors instead of silent broadcasts.

Algorithms take numpy arrays or tensors; these helpers convert them and check that every input
of a batch has one entry per observation. A ``[B]`` reward added to a ``[B, 1]`` value would
broadcast to ``[B, B]`` without a word; here it is either reshaped (``[B, 1]`` to ``[B]``) or
refused with the shapes in the message. ``predict`` and ``sample`` do not use them: as in
PARL 2.x, a single unbatched observation goes to the model as it is.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import paddle

__all__ = [
    "BatchLike",
    "as_batch_actions",
    "as_batch_continuous_actions",
    "as_batch_obs",
    "as_batch_vector",
    "check_action_range",
    "is_integer",
    "to_tensor",
]

BatchLike: TypeAlias = "paddle.Tensor | npt.ArrayLike"
"""What ``learn`` methods take: a tensor, a numpy array or anything ``numpy.asarray`` takes."""


def to_tensor(value: Any, dtype: str) -> paddle.Tensor:
    """Return ``value`` as a tensor of ``dtype``, converting numpy arrays and lists."""
    if isinstance(value, paddle.Tensor):
        target = getattr(paddle, dtype)
        return value if value.dtype == target else value.astype(target)
    return paddle.to_tensor(np.asarray(value, dtype=dtype))


def is_integer(value: Any) -> bool:
    """Whether ``value`` (a tensor or array-like) holds integers."""
    if isinstance(value, paddle.Tensor):
        return value.dtype in (paddle.int32, paddle.int64, paddle.int16, paddle.int8, paddle.uint8)
    return bool(np.issubdtype(np.asarray(value).dtype, np.integer))


def as_batch_obs(obs: Any, where: str, name: str = "obs") -> paddle.Tensor:
    """Return a float32 ``[B, ...]`` observation batch; a single 1-D observation is refused."""
    tensor = to_tensor(obs, "float32")
    if tensor.ndim < 2:
        raise ValueError(
            f"{where}: {name} must be a batch shaped [B, obs_dim], got shape "
            f"{list(tensor.shape)}; add a batch axis, e.g. {name}[None]"
        )
    return tensor


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _refuse_dtype(wrong: bool, action: Any, what: str, where: str, hint: str) -> None:
    if wrong:
        dtype = getattr(action, "dtype", type(action).__name__)
        raise TypeError(f"{where}: {what}, got dtype {dtype}; {hint}")


def as_batch_vector(
    value: Any, batch: int, name: str, where: str, dtype: str = "float32"
) -> paddle.Tensor:
    """Return a ``[B]`` tensor of ``dtype`` from a ``[B]`` or ``[B, 1]`` input."""
    tensor = to_tensor(value, dtype)
    vector = tensor.squeeze(-1) if tensor.ndim == 2 and tensor.shape[1] == 1 else tensor
    _expect(
        vector.ndim == 1 and vector.shape[0] == batch,
        f"{where}: {name} must have shape [{batch}] or [{batch}, 1] to match the {batch} "
        f"observations, got {list(tensor.shape)}",
    )
    return vector


def as_batch_actions(
    action: Any, batch: int, where: str, hint: str = "cast them, e.g. action.astype('int64')"
) -> paddle.Tensor:
    """Return int64 ``[B]`` discrete actions from a ``[B]`` or ``[B, 1]`` integer input.

    Args:
        hint: how to fix float actions, appended to the ``TypeError``.
    """
    _refuse_dtype(not is_integer(action), action, "discrete actions must be integers", where, hint)
    return as_batch_vector(action, batch, "discrete actions", where, "int64")


def as_batch_continuous_actions(
    action: Any, batch: int, where: str, hint: str = "pass float actions [B, act_dim]"
) -> paddle.Tensor:
    """Return float32 ``[B, act_dim]`` continuous actions; ``[B]`` is read as ``[B, 1]``.

    Args:
        hint: how to fix integer actions, appended to the ``TypeError``.
    """
    _refuse_dtype(is_integer(action), action, "continuous actions must be floats", where, hint)
    tensor = to_tensor(action, "float32")
    matrix = tensor.unsqueeze(-1) if tensor.ndim == 1 else tensor
    _expect(
        matrix.ndim == 2 and matrix.shape[0] == batch,
        f"{where}: continuous actions must have shape [{batch}, act_dim], got {list(tensor.shape)}",
    )
    return matrix


def check_action_range(action: paddle.Tensor, n_actions: int, where: str) -> None:
    """Raise unless every discrete action lies in ``[0, n_actions)``."""
    low, high = int(action.min()), int(action.max())
    if low < 0 or high >= n_actions:
        raise ValueError(
            f"{where}: actions must lie in [0, {n_actions}) for a model with {n_actions} "
            f"outputs, got values in [{low}, {high}]"
        )
