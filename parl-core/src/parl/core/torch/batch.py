"""Batch conversion and checks for torch ``learn`` methods (those of :mod:`parl.core.batch_checks`).

Numpy inputs become CPU tensors without a copy (``torch.as_tensor``); a tensor keeps its
device. An algorithm moves the checked batch to its ``device`` itself.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from parl.core.batch_checks import BatchChecks

import numpy as np
import numpy.typing as npt
import torch

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

BatchLike: TypeAlias = "torch.Tensor | npt.ArrayLike"
"""What ``learn`` methods take: a tensor, a numpy array or anything ``numpy.asarray`` takes."""

_INTEGERS = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def to_tensor(value: Any, dtype: str) -> torch.Tensor:
    """Return ``value`` as a tensor of ``dtype`` (``"float32"``, ``"int64"``, ...)."""
    target = getattr(torch, dtype)
    if isinstance(value, torch.Tensor):
        return value if value.dtype == target else value.to(target)
    return torch.as_tensor(np.asarray(value, dtype=dtype))


def is_integer(value: Any) -> bool:
    """Whether ``value`` (a tensor or array-like) holds integers."""
    if isinstance(value, torch.Tensor):
        return value.dtype in _INTEGERS
    return bool(np.issubdtype(np.asarray(value).dtype, np.integer))


_CHECKS = BatchChecks(to_tensor, is_integer)
as_batch_obs = _CHECKS.as_batch_obs
as_batch_vector = _CHECKS.as_batch_vector
as_batch_actions = _CHECKS.as_batch_actions
as_batch_continuous_actions = _CHECKS.as_batch_continuous_actions
check_action_range = _CHECKS.check_action_range
