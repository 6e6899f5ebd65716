"""Fitness shaping: centred ranks, which make an ES update blind to the scale of the returns."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["centered_ranks"]


def centered_ranks(values: ArrayLike) -> np.ndarray:
    """Replace every value by its rank among all of them, scaled to ``[-0.5, 0.5]``.

    The smallest value becomes ``-0.5``, the largest ``0.5``, the others lie evenly between;
    the shape is kept (Salimans et al. 2017, § 2.2: rank transformation of the returns). Equal
    values share their mean rank, so that the two sides of a pair with equal returns cancel
    (the paper's code ranks ties by their order, which adds noise to the gradient).

    Args:
        values: returns of any shape (e.g. ``[n_pairs, 2]``), at least two of them, all finite.

    Returns:
        float32 array of the same shape.

    Examples:
        >>> centered_ranks([[3.0, -1.0], [10.0, 0.5]]).tolist()
        [[0.1666666716337204, -0.5], [0.5, -0.1666666716337204]]
        >>> centered_ranks([2.0, 2.0, 7.0]).tolist()
        [-0.25, -0.25, 0.5]
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size < 2:
        raise ValueError(f"centred ranks need at least two values, got {array.size}")
    if not np.isfinite(array).all():
        raise ValueError("the returns to rank hold NaN or infinite values; check the episodes")
    flat = array.ravel()
    ranks = np.empty(flat.size, dtype=np.float64)
    ranks[np.argsort(flat, kind="stable")] = np.arange(flat.size)
    _, group, group_size = np.unique(flat, return_inverse=True, return_counts=True)
    ranks = np.bincount(group, weights=ranks)[group] / group_size[group]
    return (ranks / (flat.size - 1) - 0.5).reshape(array.shape).astype(np.float32)
