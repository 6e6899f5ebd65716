"""ReplayMemory: a fixed-size numpy ring buffer of transitions (PARL's API)."""

from __future__ import annotations

import operator
import os
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

__all__ = ["ReplayMemory"]

_FIELDS = ("obs", "action", "reward", "next_obs", "terminal")


def _positive_int(name: str, value: int) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        number = 0
    if isinstance(value, bool) or number < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return number


def _shape_tuple(value: int | Sequence[int]) -> tuple[int, ...]:
    items = value if isinstance(value, Sequence) else (value,)
    if any(isinstance(item, bool) for item in items):
        return ()
    try:
        return tuple(operator.index(item) for item in items)
    except TypeError:
        return ()


class ReplayMemory:
    """A ring buffer of ``(obs, action, reward, next_obs, terminal)`` transitions.

    When full, new transitions overwrite the oldest. Sampling is uniform with replacement and
    uses the memory's own ``numpy.random.Generator``.

    Args:
        max_size: capacity in transitions.
        obs_dim: observation shape, an int for flat observations or a tuple (e.g. ``(4, 84, 84)``).
        act_dim: 0 for discrete actions (stored as int64 scalars), else the size of a
            continuous action (stored as float32 ``[act_dim]``).
        obs_dtype: dtype of stored observations (``np.uint8`` saves memory for images).
        seed: seed of the sampling generator.

    Examples:
        >>> rpm = ReplayMemory(10_000, obs_dim=4, act_dim=0, seed=0)
        >>> rpm.append(np.zeros(4), 1, 1.0, np.ones(4), False)
        >>> obs, action, reward, next_obs, terminal = rpm.sample_batch(32)
    """

    def __init__(
        self,
        max_size: int,
        obs_dim: int | Sequence[int],
        act_dim: int,
        *,
        obs_dtype: DTypeLike = np.float32,
        seed: int | None = None,
    ) -> None:
        self.max_size = _positive_int("max_size", max_size)
        dims = _shape_tuple(obs_dim)
        if not dims or min(dims) < 1:
            raise ValueError(
                f"obs_dim must be a positive int or a tuple of positive ints, got {obs_dim!r}"
            )
        act_dims = _shape_tuple(act_dim)
        if len(act_dims) != 1 or act_dims[0] < 0 or not isinstance(act_dim, (int, np.integer)):
            raise ValueError(
                f"act_dim must be 0 (discrete actions) or a positive int (continuous action "
                f"size), got {act_dim!r}"
            )
        act_dim = act_dims[0]
        self.obs_shape: tuple[int, ...] = dims
        self.act_dim = act_dim
        self.action_shape: tuple[int, ...] = (act_dim,) if act_dim else ()
        self.obs = np.zeros((self.max_size, *dims), dtype=obs_dtype)
        self.action = np.zeros(
            (self.max_size, *self.action_shape), dtype=np.float32 if act_dim else np.int64
        )
        self.reward = np.zeros((self.max_size,), dtype=np.float32)
        self.next_obs = np.zeros_like(self.obs)
        self.terminal = np.zeros((self.max_size,), dtype=np.bool_)
        self._rng = np.random.default_rng(seed)
        self._curr_size = 0
        self._curr_pos = 0

    def _field_shape(self, field: str) -> tuple[int, ...]:
        return getattr(self, field).shape[1:]

    def _check_batch(self, field: str, value: ArrayLike, batch: int | None) -> np.ndarray:
        array = np.asarray(value)
        expected = self._field_shape(field)
        if batch is not None:
            expected = (batch, *expected)
        if field == "action" and self.act_dim == 1 and array.shape == expected[:-1]:
            array = array[..., None]
        if array.shape != expected:
            raise ValueError(
                f"{field} has shape {array.shape}, expected {expected} (this memory has "
                f"obs_dim={self.obs_shape}, act_dim={self.act_dim}); reshape the input or create "
                "the ReplayMemory with matching dimensions"
            )
        is_float_action = (
            field == "action" and not self.act_dim and not np.issubdtype(array.dtype, np.integer)
        )
        if is_float_action and not np.all(np.mod(array, 1) == 0):
            raise ValueError(
                f"discrete actions must be integers, got {value!r}; pass act_dim > 0 for "
                "continuous actions"
            )
        return array

    def append(
        self,
        obs: ArrayLike,
        act: ArrayLike,
        reward: float,
        next_obs: ArrayLike,
        terminal: bool,
    ) -> None:
        """Store one transition, overwriting the oldest when full.

        Raises:
            ValueError: if a field has the wrong shape.
        """
        values = dict(zip(_FIELDS, (obs, act, reward, next_obs, terminal), strict=True))
        checked = {field: self._check_batch(field, values[field], None) for field in _FIELDS}
        for field, array in checked.items():
            getattr(self, field)[self._curr_pos] = array
        self._curr_pos = (self._curr_pos + 1) % self.max_size
        self._curr_size = min(self._curr_size + 1, self.max_size)

    def append_batch(
        self,
        obs: ArrayLike,
        act: ArrayLike,
        reward: ArrayLike,
        next_obs: ArrayLike,
        terminal: ArrayLike,
    ) -> None:
        """Store ``B`` transitions at once (e.g. one step of ``B`` vectorised environments).

        Every argument has a leading batch axis of the same length ``B``; ``obs`` is
        ``[B, *obs_dim]``, ``reward`` and ``terminal`` are ``[B]``.

        Raises:
            ValueError: if the batch sizes differ or a field has the wrong shape.
        """
        batch = np.shape(obs)[0] if np.ndim(obs) else None
        if batch is None:
            raise ValueError(
                f"obs must have a leading batch axis [B, *{self.obs_shape}], got a scalar; "
                "use append() for a single transition"
            )
        values = dict(zip(_FIELDS, (obs, act, reward, next_obs, terminal), strict=True))
        checked = {field: self._check_batch(field, values[field], batch) for field in _FIELDS}
        if batch > self.max_size:
            # Only the newest max_size transitions survive; write just those, in order.
            skipped = batch - self.max_size
            checked = {field: array[skipped:] for field, array in checked.items()}
            self._curr_pos = (self._curr_pos + skipped) % self.max_size
            batch = self.max_size
        index = (self._curr_pos + np.arange(batch)) % self.max_size
        for field, array in checked.items():
            getattr(self, field)[index] = array
        self._curr_pos = (self._curr_pos + batch) % self.max_size
        self._curr_size = min(self._curr_size + batch, self.max_size)

    def make_index(self, batch_size: int) -> NDArray[np.int64]:
        """Draw ``batch_size`` indices uniformly (with replacement) from the stored transitions.

        Raises:
            ValueError: if the memory is empty or ``batch_size`` is not a positive integer.
        """
        batch_size = _positive_int("batch_size", batch_size)
        if self._curr_size == 0:
            raise ValueError("cannot sample from an empty ReplayMemory; append transitions first")
        return self._rng.integers(0, self._curr_size, size=batch_size)

    def sample_batch_by_index(
        self, batch_idx: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return copies of the transitions at ``batch_idx``.

        Returns:
            ``(obs, action, reward, next_obs, terminal)``.

        Raises:
            IndexError: if an index is outside ``[0, size())``.
        """
        index = np.asarray(batch_idx)
        if not np.issubdtype(index.dtype, np.integer):
            raise IndexError(f"batch_idx must hold integers, got dtype {index.dtype}")
        if index.size and (index.min() < 0 or index.max() >= self._curr_size):
            raise IndexError(
                f"batch_idx must lie in [0, {self._curr_size}) (the stored transitions), "
                f"got values from {index.min()} to {index.max()}"
            )
        obs, action, reward, next_obs, terminal = (getattr(self, f)[index] for f in _FIELDS)
        return obs, action, reward, next_obs, terminal

    def sample_batch(
        self, batch_size: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Sample ``batch_size`` transitions uniformly with replacement.

        Returns:
            ``(obs, action, reward, next_obs, terminal)``.

        Raises:
            ValueError: if the memory is empty or ``batch_size`` is not a positive integer.
        """
        return self.sample_batch_by_index(self.make_index(batch_size))

    def size(self) -> int:
        """The number of stored transitions."""
        return self._curr_size

    def __len__(self) -> int:
        return self._curr_size

    def _chronological(self) -> np.ndarray:
        return (self._curr_pos - self._curr_size + np.arange(self._curr_size)) % self.max_size

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the stored transitions to ``path`` (npz, oldest first), atomically.

        The file is written next to ``path`` and moved into place, so a crash leaves any old
        file intact. Unlike PARL, no ``.npz`` suffix is added.
        """
        target = Path(path)
        order = self._chronological()
        arrays = {field: getattr(self, field)[order] for field in _FIELDS}
        # other = [size, write position] as in PARL; the saved arrays are a full ring of `size`.
        other = np.array([self._curr_size, 0])
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, **arrays, other=other)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise

    def load(self, path: str | os.PathLike[str]) -> None:
        """Replace the memory's content with the transitions saved in ``path``.

        Reads files written by :meth:`save` and by PARL's ``ReplayMemory.save``. Everything is
        checked before anything changes, so on error the memory is unchanged.

        Raises:
            ValueError: if the file is unreadable, lacks a field, holds more transitions than
                ``max_size``, or a field's shape does not fit this memory (the message names the
                field and both shapes).
        """
        try:
            with np.load(path, allow_pickle=False) as data:
                missing = [key for key in (*_FIELDS, "other") if key not in data.files]
                if missing:
                    raise ValueError(
                        f"{path} is not a ReplayMemory file: fields {missing} are missing"
                    )
                loaded = {key: data[key] for key in (*_FIELDS, "other")}
        except (OSError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"cannot read ReplayMemory file {path}: {exc}") from exc
        other = loaded.pop("other")
        length = len(loaded["obs"]) if loaded["obs"].ndim else 0
        if other.shape != (2,) or not 0 <= other[0] <= length or not 0 <= other[1] <= length:
            raise ValueError(
                f"{path} has a malformed 'other' field {other!r} (expected [size, position] "
                f"within the {length} stored rows)"
            )
        size, pos = int(other[0]), int(other[1])
        if size > self.max_size:
            raise ValueError(
                f"{path} holds {size} transitions but this memory has max_size={self.max_size}; "
                f"create a ReplayMemory with max_size >= {size}"
            )
        for field in _FIELDS:
            expected = (length, *self._field_shape(field))
            if loaded[field].shape != expected:
                raise ValueError(
                    f"field {field!r} in {path} has shape {loaded[field].shape}, but this memory "
                    f"expects {expected}; create the ReplayMemory with the obs_dim/act_dim the "
                    "file was saved with"
                )
            if not np.can_cast(loaded[field].dtype, getattr(self, field).dtype, "same_kind"):
                raise ValueError(
                    f"field {field!r} in {path} has dtype {loaded[field].dtype}, which cannot be "
                    f"stored as {getattr(self, field).dtype}"
                )
        order = (pos - size + np.arange(size)) % max(length, 1)
        for field in _FIELDS:
            getattr(self, field)[:size] = loaded[field][order]
        self._curr_size = size
        self._curr_pos = size % self.max_size
