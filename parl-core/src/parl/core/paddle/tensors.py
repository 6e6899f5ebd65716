"""paddle tensors to numpy and back: the one place where PARL's paddle code converts them."""

from __future__ import annotations

import numpy as np
import paddle

__all__ = ["assign", "numpy_dtype", "to_numpy"]


def to_numpy(tensor: paddle.Tensor) -> np.ndarray:
    """``tensor``'s values as a numpy array on the host."""
    return tensor.numpy()


def numpy_dtype(tensor: paddle.Tensor) -> np.dtype:
    """The numpy dtype of ``tensor``'s values, without copying them to the host."""
    try:
        return np.dtype(str(tensor.dtype).removeprefix("paddle."))
    except TypeError:  # bfloat16 and other types numpy lacks
        return tensor.numpy().dtype


def assign(tensor: paddle.Tensor, array: np.ndarray) -> None:
    """Write ``array`` into ``tensor`` in place, without gradients."""
    with paddle.no_grad():
        tensor.set_value(array)
