"""Observation normalisation with running statistics merged from many actors."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from gymnasium.wrappers.utils import RunningMeanStd
from numpy.typing import ArrayLike

__all__ = ["ObservationMoments", "ObservationStats", "check_moments"]

# Observations are float32, so their mean lies within float32's range and their deviation
# within twice that; statistics beyond it come from a damaged or crafted file, and merging or
# normalising with them overflows float64 (a mean of 1e308 merges to inf, its variance to NaN).
_MAX_MEAN = float(np.finfo(np.float32).max)
_MAX_VAR = (2 * _MAX_MEAN) ** 2
_MAX_COUNT = 2.0**63


def check_moments(mean: ArrayLike, var: ArrayLike, count: float) -> None:
    """Refuse statistics that no float32 observations can have.

    Raises:
        ValueError: ``count`` is not a number in ``[0, 2**63]``; ``mean`` or ``var`` is not
            finite, ``|mean|`` exceeds float32's largest value, or ``var`` is negative or above
            the square of twice that. The message names the first that fails.
    """
    if isinstance(count, bool) or not isinstance(count, (int, float, np.number)):
        raise ValueError(f"moments count must be a number, got {count!r}")
    if not 0 <= count <= _MAX_COUNT:  # NaN fails this too
        raise ValueError(f"moments count must be a finite number >= 0 (got {count})")
    mean, var = np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
    if not (np.isfinite(mean).all() and np.isfinite(var).all()):
        raise ValueError("moments mean and var must be finite, got NaN or infinite values")
    if (np.abs(mean) > _MAX_MEAN).any():
        raise ValueError(
            f"moments mean must lie within float32's range (|mean| <= {_MAX_MEAN:.3g}), got "
            f"{np.abs(mean).max():.3g}; observations are float32"
        )
    if (var < 0).any() or (var > _MAX_VAR).any():
        raise ValueError(f"moments var must be >= 0 and at most {_MAX_VAR:.3g}, got {var}")


@dataclass(frozen=True)
class ObservationMoments:
    """Mean, variance and count of a set of observations: what an actor sends to the learner."""

    mean: np.ndarray
    var: np.ndarray
    count: float


class ObservationStats:
    """Running mean and variance of observations, normalising them as Salimans et al. did.

    The statistics are gymnasium's :class:`~gymnasium.wrappers.utils.RunningMeanStd`, which
    merges batches exactly (Chan et al.'s parallel variance), so the learner gets the same
    numbers whether it sees every observation or the :class:`ObservationMoments` of several
    actors. ``normalize`` divides by ``max(std, min_std)`` so that a constant feature is not
    blown up (the paper's code floors the variance at 0.01, i.e. ``min_std=0.1``), and clips to
    ``±clip`` if given.

    Args:
        shape: shape of one observation.
        min_std: floor of the standard deviation used to normalise.
        clip: bound of the normalised values; ``None`` leaves them unclipped.
    """

    def __init__(
        self, shape: tuple[int, ...], min_std: float = 0.1, clip: float | None = None
    ) -> None:
        if not min_std > 0 or (clip is not None and not clip > 0):
            raise ValueError(f"min_std and clip must be > 0, got {min_std!r} and {clip!r}")
        self.shape = tuple(shape)
        self.min_std, self.clip = float(min_std), clip
        self.running = RunningMeanStd(epsilon=0.0, shape=self.shape)

    @property
    def count(self) -> float:
        """How many observations the statistics hold."""
        return float(self.running.count)

    def _batch(self, obs: ArrayLike) -> np.ndarray:
        array = np.asarray(obs, dtype=np.float64)
        if array.shape[array.ndim - len(self.shape) :] != self.shape:
            raise ValueError(f"observations must end in shape {self.shape}, got {array.shape}")
        return array.reshape(-1, *self.shape)

    def update(self, obs: ArrayLike) -> None:
        """Add one observation or a batch ``[B, *shape]``."""
        batch = self._batch(obs)
        if len(batch):
            self.running.update(batch)

    def merge(self, moments: ObservationMoments) -> None:
        """Add the observations another :class:`ObservationStats` summarised in ``moments``."""
        if np.shape(moments.mean) != self.shape or np.shape(moments.var) != self.shape:
            raise ValueError(
                f"moments of shape {np.shape(moments.mean)} cannot merge into statistics of "
                f"shape {self.shape}"
            )
        check_moments(moments.mean, moments.var, moments.count)
        if moments.count > 0:
            merged = copy.deepcopy(self.running)  # changed only if the result is valid too
            with np.errstate(all="ignore"):
                merged.update_from_moments(moments.mean, moments.var, moments.count)
            check_moments(merged.mean, merged.var, merged.count)
            self.running = merged

    def moments(self) -> ObservationMoments:
        """A copy of the statistics, to send or merge elsewhere."""
        return ObservationMoments(
            np.array(self.running.mean), np.array(self.running.var), self.count
        )

    def normalize(self, obs: ArrayLike) -> np.ndarray:
        """``(obs − mean) / max(std, min_std)`` (clipped to ``±clip`` if set) as float32; the
        identity while no observation has been counted."""
        array = np.asarray(obs, dtype=np.float64)
        if self.count == 0:
            return array.astype(np.float32)
        std = np.maximum(np.sqrt(self.running.var), self.min_std)
        normalized = (array - self.running.mean) / std
        if self.clip is not None:
            normalized = np.clip(normalized, -self.clip, self.clip)
        return normalized.astype(np.float32)
