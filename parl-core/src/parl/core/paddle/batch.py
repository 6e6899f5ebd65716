"""Batch conversion and checks for paddle ``learn`` methods: clear errors, no silent broadcasts.

Algorithms take numpy arrays or tensors; these helpers convert them and check that every input
of a batch has one entry per observation (the checks are :mod:`parl.core.batch_checks`',
shared with the torch backend's :mod:`parl.core.torch.batch`). ``predict`` and ``sample`` do
not use them: as in PARL 2.x, a single unbatched observation goes to the model as it is.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from parl.core.batch_checks import BatchChecks

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


_CHECKS = BatchChecks(to_tensor, is_integer)
as_batch_obs = _CHECKS.as_batch_obs
as_batch_vector = _CHECKS.as_batch_vector
as_batch_actions = _CHECKS.as_batch_actions
as_batch_continuous_actions = _CHECKS.as_batch_continuous_actions
check_action_range = _CHECKS.check_action_range
