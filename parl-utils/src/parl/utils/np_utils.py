"""PARL 2.x's ``parl.utils.np_utils``: softmax and cross-entropy on numpy arrays."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["np_cross_entropy", "np_softmax"]


def np_softmax(logits: ArrayLike) -> NDArray[np.floating]:
    """Softmax over the last axis (shifted by the maximum, so large logits do not overflow)."""
    array = np.asarray(logits, dtype=np.float64)
    exps = np.exp(array - array.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def np_cross_entropy(probs: ArrayLike, labels: ArrayLike) -> NDArray[np.floating]:
    """Cross-entropy ``-sum(labels * log(probs))`` over the last axis, kept as a size-1 axis.

    Args:
        probs: ``[..., n_classes]`` probabilities.
        labels: one-hot (or soft) labels shaped like ``probs``, or integer class ids
            ``[..., 1]`` (sparse labels).

    Raises:
        ValueError: if the shapes do not fit or a sparse label is out of range.
    """
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    n_classes = probs.shape[-1]
    if labels.shape[-1] == 1 and n_classes != 1:
        ids = labels.reshape(-1).astype(np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= n_classes):
            raise ValueError(f"sparse labels must lie in [0, {n_classes}), got {labels.tolist()}")
        labels = np.eye(n_classes)[ids].reshape(*labels.shape[:-1], n_classes)
    if labels.shape != probs.shape:
        raise ValueError(
            f"labels of shape {labels.shape} do not fit probs of shape {probs.shape}; pass "
            "one-hot labels of the same shape or class ids shaped [..., 1]"
        )
    return -np.sum(labels * np.log(probs), axis=-1, keepdims=True)
