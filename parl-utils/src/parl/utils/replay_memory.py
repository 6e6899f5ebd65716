"""ReplayMemory: a fixed-size ring buffer of transitions (PARL's API and file format), in numpy
on the host or, as :class:`DeviceReplayMemory`, in framework tensors on the learner's device."""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from parl.core.backend import BACKENDS, get_backend
from parl.core.files import atomic_write
from parl.core.ops import Tensor, ops_of_backend
from parl.utils._validation import non_negative_int, positive_int

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

__all__ = ["DeviceReplayMemory", "ReplayMemory", "TransitionBatch", "make_replay_memory"]

_FIELDS = ("obs", "action", "reward", "next_obs", "terminal")
# PARL 2.x's npz keys, in the order it writes them.
_FILE_KEYS = ("obs", "action", "reward", "terminal", "next_obs", "other")


class TransitionBatch(NamedTuple):
    """A batch of transitions; unpacks as PARL's ``(obs, action, reward, next_obs, terminal)``."""

    obs: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    next_obs: np.ndarray
    terminal: np.ndarray


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
        self.max_size = positive_int("max_size", max_size)
        dims = list(obs_dim) if isinstance(obs_dim, Sequence) else [obs_dim]
        if not dims:
            raise ValueError("obs_dim must not be empty; pass the observation shape, e.g. 4")
        self.obs_shape: tuple[int, ...] = tuple(
            positive_int(f"obs_dim[{i}]", dim) for i, dim in enumerate(dims)
        )
        act_dim = non_negative_int("act_dim", act_dim)
        if seed is not None:
            seed = non_negative_int("seed", seed)
        self.act_dim = act_dim
        self.action_shape: tuple[int, ...] = (act_dim,) if act_dim else ()
        # Each field's row shape and dtype, as stored in files and checked on input.
        self._rows: dict[str, tuple[tuple[int, ...], np.dtype[Any]]] = {
            "obs": (self.obs_shape, np.dtype(obs_dtype)),
            "action": (self.action_shape, np.dtype(np.float32 if act_dim else np.int64)),
            "reward": ((), np.dtype(np.float32)),
            "next_obs": (self.obs_shape, np.dtype(obs_dtype)),
            "terminal": ((), np.dtype(np.bool_)),
        }
        self._allocate(seed)
        self._curr_size = 0
        self._curr_pos = 0

    # -- storage: numpy arrays here; DeviceReplayMemory keeps tensors ---------------------------

    def _allocate(self, seed: int | None) -> None:
        """Make the empty fields and the sampling generator."""
        for field, (shape, dtype) in self._rows.items():
            setattr(self, field, np.zeros((self.max_size, *shape), dtype=dtype))
        self._rng = np.random.default_rng(seed)

    def _store(self, start: int, rows: Mapping[str, np.ndarray]) -> None:
        """Write checked ``rows`` (at most ``max_size`` per field) from ring position ``start``."""
        for field, array in rows.items():
            stored = getattr(self, field)
            for begin, end, offset in _ring_spans(start, len(array), self.max_size):
                stored[begin:end] = array[offset : offset + end - begin]

    def _store_one(self, position: int, row: Mapping[str, np.ndarray]) -> None:
        """Write one checked transition at ring ``position``."""
        for field, array in row.items():
            getattr(self, field)[position] = array

    def _draw(self, count: int) -> Any:
        """``count`` indices drawn uniformly from ``[0, size())``."""
        return self._rng.integers(0, self._curr_size, size=count)

    def _gather(self, index: Any) -> TransitionBatch:
        """The transitions at ``index`` (already checked)."""
        return TransitionBatch(*(getattr(self, field)[index] for field in _FIELDS))

    def _host_rows(self, field: str, size: int) -> np.ndarray:
        """The first ``size`` stored rows of ``field`` as a numpy array of the file's dtype."""
        rows: np.ndarray = getattr(self, field)[:size]
        return rows

    # -- input checks --------------------------------------------------------------------------

    def _field_shape(self, field: str) -> tuple[int, ...]:
        return self._rows[field][0]

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
        self._store_one(self._curr_pos, checked)
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
        self._store(self._curr_pos, checked)
        self._curr_pos = (self._curr_pos + batch) % self.max_size
        self._curr_size = min(self._curr_size + batch, self.max_size)

    def make_index(self, batch_size: int) -> NDArray[np.int64]:
        """Draw ``batch_size`` indices uniformly (with replacement) from the stored transitions.

        Raises:
            ValueError: if the memory is empty or ``batch_size`` is not a positive integer.
        """
        batch_size = positive_int("batch_size", batch_size)
        if self._curr_size == 0:
            raise ValueError("cannot sample from an empty ReplayMemory; append transitions first")
        return self._draw(batch_size)

    def sample_batch_by_index(self, batch_idx: ArrayLike) -> TransitionBatch:
        """Return copies of the transitions at ``batch_idx``.

        Returns:
            A :class:`TransitionBatch`, unpackable as ``(obs, action, reward, next_obs, terminal)``.

        Raises:
            IndexError: if an index is outside ``[0, size())``.
        """
        return self._gather(self._check_index(batch_idx))

    def _check_index(self, batch_idx: ArrayLike) -> np.ndarray:
        index = np.asarray(batch_idx)
        if not np.issubdtype(index.dtype, np.integer):
            raise IndexError(f"batch_idx must hold integers, got dtype {index.dtype}")
        if index.size and (index.min() < 0 or index.max() >= self._curr_size):
            raise IndexError(
                f"batch_idx must lie in [0, {self._curr_size}) (the stored transitions), "
                f"got values from {index.min()} to {index.max()}"
            )
        return index

    def sample_batch(self, batch_size: int) -> TransitionBatch:
        """Sample ``batch_size`` transitions uniformly with replacement.

        Returns:
            A :class:`TransitionBatch`, unpackable as ``(obs, action, reward, next_obs, terminal)``.

        Raises:
            ValueError: if the memory is empty or ``batch_size`` is not a positive integer.
        """
        return self._gather(self.make_index(batch_size))

    def sample_tensor_batches(
        self, batch_size: int, num_batches: int, backend: str = "paddle"
    ) -> list[TransitionBatch]:
        """Sample ``num_batches`` batches at once and hand them out as tensors of ``backend``.

        The same draws as ``num_batches`` calls of :meth:`sample_batch` (uniform, with
        replacement, from what is stored now), but with one index draw, one numpy gather and
        one host-to-tensor conversion per field for all of them, instead of five conversions per
        gradient step. ``terminal`` comes as float32 (what a TD target multiplies with);
        the other fields keep their stored dtypes. The tensors are made by the ops of
        ``backend`` (``"paddle"`` or ``"torch"``: CPU tensors, which a torch algorithm moves to
        its device), so the rest of the memory works without a framework.

        Returns:
            ``num_batches`` :class:`TransitionBatch` es of tensors with ``batch_size`` rows.

        Raises:
            ValueError: if the memory is empty, a size is not a positive integer or
                ``backend`` is not a framework.
        """
        num_batches = positive_int("num_batches", num_batches)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be 'paddle' or 'torch', got {backend!r}")
        batch = self._gather(self.make_index(batch_size * num_batches))
        arrays = batch._replace(terminal=batch.terminal.astype(np.float32))
        to_tensor = ops_of_backend(backend).to_tensor
        return _split(TransitionBatch(*(to_tensor(a, str(a.dtype)) for a in arrays)), num_batches)

    def load_from_d4rl(self, dataset: Mapping[str, Any]) -> None:
        """Replace the memory's content with an offline dataset (PARL 2.x's CQL example).

        Args:
            dataset: a dict in D4RL's layout: ``observations``, ``actions``, ``rewards``,
                ``next_observations``, ``terminals`` (one row per transition; ``timeouts``,
                if present, is not stored: a timed-out step still bootstraps). See
                :mod:`parl.utils.offline` for loaders and a builder.

        Raises:
            ValueError: if the dataset is malformed, does not fit this memory's
                ``obs_dim``/``act_dim``, or holds more than ``max_size`` transitions; the
                memory is then unchanged.
        """
        from parl.utils.offline import check_dataset  # gymnasium-free import of the memory

        data = check_dataset(dataset, "load_from_d4rl")
        rows = len(data["rewards"])
        if rows > self.max_size:
            raise ValueError(
                f"the dataset holds {rows} transitions but this memory has "
                f"max_size={self.max_size}; create a ReplayMemory with max_size >= {rows}"
            )
        columns = ("observations", "actions", "rewards", "next_observations", "terminals")
        checked = {
            field: self._check_batch(field, data[key], rows)
            for field, key in zip(_FIELDS, columns, strict=True)
        }
        self._store(0, checked)
        self._curr_size = rows
        self._curr_pos = rows % self.max_size

    def size(self) -> int:
        """The number of stored transitions."""
        return self._curr_size

    def __len__(self) -> int:
        return self._curr_size

    def save(self, pathname: str | os.PathLike[str]) -> Path:
        """Write the memory to an ``.npz`` file in PARL 2.x's layout, atomically, owner-only.

        The file holds the arrays ``obs``, ``action``, ``reward``, ``terminal``, ``next_obs``
        (the ring buffer's first ``size()`` rows, in ring order) and ``other = int32 [size,
        write position]``, so PARL 2.x's ``ReplayMemory.load`` reads it too. As ``numpy.savez``
        (and so PARL) does, ``.npz`` is appended to a path without it. A crash while writing
        leaves any old file intact.

        Returns:
            The path written.
        """
        path = Path(pathname)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        size = self._curr_size
        arrays: dict[str, Any] = {key: self._host_rows(key, size) for key in _FILE_KEYS[:-1]}
        other = np.array([size, self._curr_pos], dtype=np.int32)
        with atomic_write(path) as handle:
            np.savez(handle, **arrays, other=other)
        return path

    def load(self, pathname: str | os.PathLike[str]) -> None:
        """Replace the memory's content with the transitions in ``pathname``.

        Reads files written by :meth:`save` and by PARL 2.x (whose arrays span its whole
        ``max_size``; only the stored rows are read). Nothing is unpickled, and the file is
        checked whole (entries, shapes, dtypes, ``size`` and write position in range) before
        anything changes; on error the memory is unchanged.

        Raises:
            ValueError: if the file is unreadable or not a ReplayMemory file, or does not fit
                this memory; the message names the field and what was expected.
        """
        try:
            with zipfile.ZipFile(pathname) as archive:
                _check_entries(archive, pathname)
                headers = {key: _read_header(archive, key, pathname) for key in _FILE_KEYS}
                length = self._check_fields(headers, pathname)
                size, pos = self._check_other(_read_rows(archive, "other", 2, pathname), length)
                loaded = {field: _read_rows(archive, field, size, pathname) for field in _FIELDS}
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise ValueError(f"cannot read ReplayMemory file {pathname}: {exc}") from exc
        except (NotImplementedError, RuntimeError) as exc:  # zipfile: another compression,
            raise ValueError(  # an encrypted entry
                f"cannot read ReplayMemory file {pathname}: {exc}; ReplayMemory.save writes "
                "plain or deflated entries"
            ) from exc
        order = (pos - size + np.arange(size)) % max(size, 1)
        self._store(0, {field: loaded[field][order] for field in _FIELDS})
        self._curr_size = size
        self._curr_pos = size % self.max_size

    def _check_fields(self, headers: dict[str, _Header], path: Any) -> int:
        """Check every array's shape and dtype against this memory; return the row count."""
        length = headers["obs"].shape[0] if headers["obs"].shape else 0
        for field in _FIELDS:
            shape, dtype = headers[field].shape, headers[field].dtype
            expected = (length, *self._field_shape(field))
            if shape != expected:
                raise ValueError(
                    f"field {field!r} in {path} has shape {shape}, but this memory expects "
                    f"{expected}; create the ReplayMemory with the obs_dim/act_dim the file was "
                    "saved with"
                )
            target = self._rows[field][1]
            if not np.can_cast(dtype, target, "same_kind"):
                raise ValueError(
                    f"field {field!r} in {path} has dtype {dtype}, which cannot be stored as "
                    f"{target}"
                )
        other = headers["other"]
        if other.shape != (2,) or other.dtype.kind not in "iu":
            raise ValueError(
                f"{path} has a malformed 'other' entry (shape {other.shape}, dtype "
                f"{other.dtype}); it must be [size, write position] as two integers"
            )
        return length

    def _check_other(self, other: np.ndarray, length: int) -> tuple[int, int]:
        """Check ``other = [size, write position]`` against the file and this memory."""
        size, pos = int(other[0]), int(other[1])
        if not (0 <= size <= length and 0 <= pos <= length and (size == length or pos == size)):
            raise ValueError(
                f"the file's other = [size={size}, position={pos}] does not fit its {length} "
                "rows (0 <= size <= rows, and position == size unless the ring is full)"
            )
        if size > self.max_size:
            raise ValueError(
                f"the file holds {size} transitions but this memory has "
                f"max_size={self.max_size}; create a ReplayMemory with max_size >= {size}"
            )
        return size, pos


class DeviceReplayMemory(ReplayMemory):
    """A :class:`ReplayMemory` whose fields are tensors on the learner's device, sampled there.

    Appends copy the new transitions to the device once (a vector env's step in one copy per
    field); sampling draws the indices on the device from the memory's own seeded generator
    and gathers the rows there, so a gradient step reads its batch without a host-to-device
    copy or a host round trip. The same seed gives the same batches (but not the host
    memory's: the draws come from the framework's generator, not numpy's). Batches are
    :class:`TransitionBatch` es of tensors with ``terminal`` as float32, which every
    algorithm's ``learn`` takes as they are. Checks, errors and the file format
    (:meth:`save`, :meth:`load`) are the host memory's.

    Args:
        max_size, obs_dim, act_dim, obs_dtype, seed: as :class:`ReplayMemory`'s.
        backend: the learner's framework, ``"paddle"`` or ``"torch"``; None:
            ``parl.get_backend()``.
        device: where the learner computes: torch ``"cpu"``, ``"cuda"``, ``"cuda:<index>"``
            (``agent.device``); paddle None or ``"cpu"``, its tensors going to the place set by
            ``paddle.set_device``.

    Raises:
        ValueError: a bad size or dimension (as :class:`ReplayMemory`), or a device the
            framework cannot use here.

    Examples:
        >>> rpm = DeviceReplayMemory(10_000, obs_dim=4, act_dim=0, backend="paddle", seed=0)
        >>> rpm.append_batch(np.zeros((2, 4)), [0, 1], [1.0, 0.0], np.ones((2, 4)), [False, True])
        >>> batch = rpm.sample_batch(32)  # tensors on the device; agent.learn(*batch)
    """

    def __init__(
        self,
        max_size: int,
        obs_dim: int | Sequence[int],
        act_dim: int,
        *,
        backend: str | None = None,
        device: Any = None,
        obs_dtype: DTypeLike = np.float32,
        seed: int | None = None,
    ) -> None:
        self.ops = ops_of_backend(backend or get_backend())
        self.device = self.ops.resolve_device("cpu" if device is None else device)
        super().__init__(max_size, obs_dim, act_dim, obs_dtype=obs_dtype, seed=seed)

    def _stored_dtype(self, field: str) -> str:
        # terminal is kept as float32, the dtype a TD target multiplies with.
        return "float32" if field == "terminal" else str(self._rows[field][1])

    def _allocate(self, seed: int | None) -> None:
        for field, (shape, _) in self._rows.items():
            dtype = self._stored_dtype(field)
            setattr(self, field, self.ops.zeros((self.max_size, *shape), dtype, self.device))
        self._generator = self.ops.generator(seed, self.device)

    def _store(self, start: int, rows: Mapping[str, np.ndarray]) -> None:
        for field, array in rows.items():
            stored = getattr(self, field)
            tensor = self.ops.to_tensor(array, self._stored_dtype(field), self.device)
            for begin, end, offset in _ring_spans(start, len(array), self.max_size):
                stored[begin:end] = tensor[offset : offset + end - begin]

    def _store_one(self, position: int, row: Mapping[str, np.ndarray]) -> None:
        self._store(position, {field: array[None] for field, array in row.items()})

    def _draw(self, count: int) -> Tensor:
        return self.ops.randint(self._curr_size, count, self._generator)

    def _gather(self, index: Any) -> TransitionBatch:
        rows = (self.ops.take_rows(getattr(self, field), index) for field in _FIELDS)
        return TransitionBatch(*rows)

    def _host_rows(self, field: str, size: int) -> np.ndarray:
        rows = np.asarray(self.ops.to_numpy(getattr(self, field)[:size]))
        return rows.astype(self._rows[field][1], copy=False)

    def make_index(self, batch_size: int) -> Tensor:
        """Draw ``batch_size`` indices uniformly (with replacement), as an int64 tensor on the
        device.

        Raises:
            ValueError: if the memory is empty or ``batch_size`` is not a positive integer.
        """
        return super().make_index(batch_size)

    def sample_batch_by_index(self, batch_idx: Any) -> TransitionBatch:
        """The transitions at ``batch_idx``, as tensors on the device.

        ``batch_idx`` is checked on the host as :class:`ReplayMemory` does; a tensor (e.g. from
        :meth:`make_index`) is read back for that, one host round trip, which
        :meth:`sample_batch` does without.

        Raises:
            IndexError: if an index is outside ``[0, size())`` or not an integer, or the
                indices are not one-dimensional.
        """
        if isinstance(batch_idx, self.ops.BACKEND.tensor_type):
            batch_idx = self.ops.to_numpy(batch_idx)
        index = self._check_index(batch_idx)
        if index.ndim != 1:
            raise IndexError(
                f"batch_idx must be one-dimensional [K], got shape {index.shape}; flatten it"
            )
        return self._gather(self.ops.to_tensor(index, "int64", self.device))

    def sample_tensor_batches(
        self, batch_size: int, num_batches: int, backend: str | None = None
    ) -> list[TransitionBatch]:
        """Sample ``num_batches`` batches with one draw and one gather per field, on the device.

        The same draws as ``num_batches`` calls of :meth:`sample_batch`.

        Args:
            backend: None or this memory's framework (the argument of
                :meth:`ReplayMemory.sample_tensor_batches`).

        Raises:
            ValueError: if the memory is empty, a size is not a positive integer, or
                ``backend`` names another framework.
        """
        num_batches = positive_int("num_batches", num_batches)
        own = self.ops.BACKEND.name
        if backend is not None and backend != own:
            raise ValueError(
                f"backend={backend!r}, but this DeviceReplayMemory keeps {own} tensors; "
                f"pass backend={own!r} or None"
            )
        return _split(self.sample_batch(batch_size * num_batches), num_batches)


def make_replay_memory(
    max_size: int,
    obs_dim: int | Sequence[int],
    act_dim: int,
    *,
    where: str = "auto",
    device: Any = "cpu",
    backend: str | None = None,
    obs_dtype: DTypeLike = np.float32,
    seed: int | None = None,
) -> ReplayMemory:
    """A :class:`ReplayMemory` on the host or a :class:`DeviceReplayMemory` on ``device``.

    Args:
        where: ``"host"`` (numpy), ``"device"`` (tensors on ``device``), or ``"auto"``: the
            device unless it is the CPU, where the numpy memory keeps the draws of runs made
            with it (the two memories draw different batches from the same seed).
        device, backend: the learner's (``agent.device``, the algorithm's framework).
        max_size, obs_dim, act_dim, obs_dtype, seed: as :class:`ReplayMemory`'s.

    Raises:
        ValueError: ``where`` is none of the three, or as the memory's constructor.
    """
    if where not in ("auto", "host", "device"):
        raise ValueError(f"where must be 'auto', 'host' or 'device', got {where!r}")
    on_device = where == "device" or (where == "auto" and str(device) != "cpu")
    if on_device:
        return DeviceReplayMemory(
            max_size,
            obs_dim,
            act_dim,
            backend=backend,
            device=device,
            obs_dtype=obs_dtype,
            seed=seed,
        )
    return ReplayMemory(max_size, obs_dim, act_dim, obs_dtype=obs_dtype, seed=seed)


def _ring_spans(start: int, count: int, size: int) -> list[tuple[int, int, int]]:
    """The ``(begin, end, offset)`` slices of a ring of ``size`` that ``count <= size`` rows
    written from position ``start`` cover: rows ``offset:offset + end - begin`` go to
    ``begin:end`` (two spans when the write wraps)."""
    first = min(count, size - start)
    spans = [(start, start + first, 0)] if first else []
    if count > first:
        spans.append((0, count - first, first))
    return spans


def _split(batch: TransitionBatch, num_batches: int) -> list[TransitionBatch]:
    """``batch`` cut into ``num_batches`` equal batches of consecutive rows (views)."""
    size = batch.obs.shape[0] // num_batches
    return [
        TransitionBatch(*(field[i * size : (i + 1) * size] for field in batch))
        for i in range(num_batches)
    ]


class _Header(NamedTuple):
    shape: tuple[int, ...]
    dtype: np.dtype[Any]


def _check_entries(archive: zipfile.ZipFile, path: Any) -> None:
    names = set(archive.namelist())
    expected = {f"{key}.npy" for key in _FILE_KEYS}
    missing = [key for key in _FILE_KEYS if f"{key}.npy" not in names]
    if missing:
        raise ValueError(f"{path} is not a ReplayMemory file: fields {missing} are missing")
    if names - expected:
        raise ValueError(
            f"{path} has unexpected entries {sorted(names - expected)}; a ReplayMemory file "
            f"holds exactly {sorted(expected)}"
        )


def _open_npy(archive: zipfile.ZipFile, key: str, path: Any) -> tuple[IO[bytes], _Header]:
    """Open ``key.npy`` and read its header, leaving the stream at the data."""
    member = archive.open(f"{key}.npy")
    try:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise ValueError(f"unsupported .npy format version {version}")
    except ValueError as exc:
        member.close()
        raise ValueError(f"{path}: {key}.npy is not a readable numpy array: {exc}") from exc
    if dtype.hasobject or (fortran and len(shape) > 1):
        member.close()
        raise ValueError(
            f"{path}: {key}.npy holds {'Python objects' if dtype.hasobject else 'a Fortran-order'}"
            " array; ReplayMemory files hold plain numeric arrays (nothing is unpickled)"
        )
    return member, _Header(tuple(shape), dtype)


def _read_header(archive: zipfile.ZipFile, key: str, path: Any) -> _Header:
    member, header = _open_npy(archive, key, path)
    member.close()
    return header


def _read_rows(archive: zipfile.ZipFile, key: str, rows: int, path: Any) -> np.ndarray:
    """Read the first ``rows`` rows of ``key.npy``, no more (PARL pads to its max_size)."""
    member, header = _open_npy(archive, key, path)
    with member:
        row_shape = header.shape[1:]
        count = rows * int(np.prod(row_shape, dtype=np.int64)) * header.dtype.itemsize
        data = member.read(count)
    if len(data) != count:
        raise ValueError(f"{path}: {key}.npy is truncated ({len(data)} of {count} bytes)")
    return np.frombuffer(data, dtype=header.dtype).reshape(rows, *row_shape)
