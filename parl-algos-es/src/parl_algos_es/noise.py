"""The shared noise table: one block of Gaussian numbers per machine, addressed by index.

Evolution strategies perturb a parameter vector of ``dim`` numbers with Gaussian noise. Instead
of sending perturbations over the wire, every process builds the same table from the same seed
(numpy's PCG64 stream is the same on every machine) and a perturbation travels as the index of
its first number: ``table.get(index, dim)`` is ``table[index:index + dim]`` everywhere (Salimans
et al. 2017, § 2.1).

A table of :data:`MACHINE_SHARE_MIN` numbers or more lives once per machine and user, in shared
memory: the first process creates and fills it, the others map it read-only. The segment is
owner-only; a process uses another's segment only when it belongs to the same user, is complete,
and its numbers match the digest its creator wrote, and builds a private table otherwise. The
creator unlinks it when it exits (Python's resource tracker does if it is killed); processes
still attached keep their mapping, and the next process creates a new segment.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import mmap
import operator
import os
import stat
import struct
import threading
import time
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path

from parl.core.validation import non_negative_int, positive_int

import numpy as np

__all__ = ["MACHINE_SHARE_MIN", "SharedNoiseTable", "shared_noise_table"]

MACHINE_SHARE_MIN = 1_000_000
"""Tables of at least this many numbers (4 MB) are shared by the processes of a machine."""
ATTACH_TIMEOUT_S = 60.0
"""How long a process waits for another to finish filling a table before building its own."""
_MAGIC = b"PARLNZ01"
_HEADER = struct.Struct("<8sQQ32sB")  # magic, size, seed, sha256 of the numbers, ready flag
_OFFSET = 64  # the numbers start here (aligned)
_SHM_DIR = Path("/dev/shm")


def _generate(size: int, seed: int, out: np.ndarray | None = None) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(size, dtype=np.float32, out=out)


def _segment_name(size: int, seed: int) -> str:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return f"parl_es_noise_{uid}_{seed}_{size}"


def _numbers(segment: SharedMemory, size: int) -> np.ndarray:
    return np.ndarray((size,), np.float32, buffer=segment.buf, offset=_OFFSET)


def _create_segment(size: int, seed: int) -> tuple[np.ndarray, SharedMemory] | None:
    """Create, fill and publish the machine's segment; None if it exists or cannot be made."""
    try:
        segment = SharedMemory(_segment_name(size, seed), create=True, size=_OFFSET + 4 * size)
    except (FileExistsError, OSError, ValueError):
        return None
    try:
        numbers = _numbers(segment, size)
        _generate(size, seed, out=numbers)
        digest = hashlib.sha256(numbers.data).digest()
        buf = segment.buf
        assert buf is not None
        buf[: _HEADER.size] = _HEADER.pack(_MAGIC, size, seed, digest, 0)
        buf[_HEADER.size - 1] = 1  # ready: the header and the numbers are complete
    except BaseException:
        segment.close()
        segment.unlink()
        raise
    atexit.register(_unlink, segment)
    return numbers, segment


def _unlink(segment: SharedMemory) -> None:
    with contextlib.suppress(OSError):
        segment.unlink()


def _attach_segment(size: int, seed: int, timeout: float) -> tuple[np.ndarray, mmap.mmap] | None:
    """Map the machine's segment read-only if it is this user's, complete and intact; else None.

    It is opened as a file of ``/dev/shm`` rather than through ``SharedMemory``, which (before
    Python 3.13) would register it with this process's resource tracker, and a tracker unlinks
    what it tracks: only the creator owns the segment.
    """
    nbytes = _OFFSET + 4 * size
    try:
        fd = os.open(_SHM_DIR / _segment_name(size, seed), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        mine = info.st_uid == os.getuid() and not stat.S_IMODE(info.st_mode) & 0o077
        if not (stat.S_ISREG(info.st_mode) and mine and info.st_size >= nbytes):
            return None
        mapping = mmap.mmap(fd, nbytes, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    deadline = time.monotonic() + timeout
    while mapping[_HEADER.size - 1] != 1:  # its creator is still filling it
        if time.monotonic() > deadline:
            mapping.close()
            return None
        threading.Event().wait(0.01)
    magic, found_size, found_seed, digest, _ = _HEADER.unpack(mapping[: _HEADER.size])
    numbers = np.frombuffer(mapping, np.float32, size, _OFFSET)
    if (magic, found_size, found_seed) != (_MAGIC, size, seed) or (
        hashlib.sha256(numbers.data).digest() != digest
    ):
        del numbers  # releases the mapping's buffer
        mapping.close()
        return None
    return numbers, mapping


def _machine_table(size: int, seed: int) -> tuple[np.ndarray, SharedMemory | mmap.mmap] | None:
    """The machine's table for ``(size, seed)``: created here or attached to; None when shared
    memory cannot serve (the caller then builds a private table)."""
    if not hasattr(os, "getuid") or not _SHM_DIR.is_dir():  # POSIX shared memory in /dev/shm
        return None
    return _create_segment(size, seed) or _attach_segment(size, seed, ATTACH_TIMEOUT_S)


class SharedNoiseTable:
    """``size`` float32 standard-normal numbers drawn once from ``seed``.

    Build it through :func:`shared_noise_table`, which keeps one table per ``(size, seed)`` in a
    process (so that a learner and its actors in one process share the memory) and, for large
    tables, one per machine.

    Args:
        size: how many numbers the table holds; perturbations of ``dim`` numbers start at the
            ``size - dim + 1`` indices ``0 … size - dim``.
        seed: seed of the generator that fills it; every process must use the same.
        machine: keep the numbers in the machine's shared memory (created by the first process,
            attached to by the others) where it can; a private table otherwise.
    """

    def __init__(self, size: int, seed: int, *, machine: bool = False) -> None:
        self.size = positive_int("noise table size", size)
        self.seed = non_negative_int("noise table seed", seed)
        self.segment: str | None = None
        """Name of the shared memory holding the numbers (None: a private table)."""
        shared = _machine_table(self.size, self.seed) if machine else None
        if shared is None:
            self.noise = _generate(self.size, self.seed)
        else:
            self.noise, self._mapping = shared  # the mapping lives as long as the table
            self.segment = _segment_name(self.size, self.seed)
        self.noise.flags.writeable = False

    def _check(self, index: int, dim: int) -> tuple[int, int]:
        dim = positive_int("dim", dim)
        if dim > self.size:
            raise ValueError(
                f"a perturbation of {dim} numbers does not fit a noise table of {self.size}; "
                "make noise_table_size larger than the number of parameters"
            )
        try:
            start = operator.index(index)
        except TypeError:
            raise TypeError(f"a noise index must be an integer, got {index!r}") from None
        if not 0 <= start <= self.size - dim:
            raise IndexError(
                f"noise index {start} is out of range: a perturbation of {dim} numbers starts at "
                f"0 … {self.size - dim} in this table of {self.size}; was the index drawn from a "
                "table of another size?"
            )
        return start, dim

    def get(self, index: int, dim: int) -> np.ndarray:
        """The perturbation that starts at ``index``: a read-only float32 view of ``dim`` numbers.

        Raises:
            IndexError: ``index`` is outside ``0 … size - dim``.
        """
        start, dim = self._check(index, dim)
        return self.noise[start : start + dim]

    def check_indices(self, indices: np.ndarray, dim: int) -> np.ndarray:
        """Return ``indices`` as int64 after checking every one is a valid start for ``dim``.

        Raises:
            TypeError: the indices are not integers.
            IndexError: one of them is out of range; the message names the first.
        """
        array = np.asarray(indices)
        if array.dtype.kind not in "iu":
            raise TypeError(f"noise indices must be integers, got an array of {array.dtype}")
        for index in array.ravel():
            self._check(int(index), dim)
        return array.astype(np.int64)

    def sample_index(self, rng: np.random.Generator, dim: int) -> int:
        """Draw a uniformly random start index for a perturbation of ``dim`` numbers."""
        _, dim = self._check(0, dim)
        return int(rng.integers(0, self.size - dim + 1))


@functools.lru_cache(maxsize=4)
def shared_noise_table(size: int, seed: int) -> SharedNoiseTable:
    """This process's noise table for ``(size, seed)``, created on first use and then reused;
    tables of :data:`MACHINE_SHARE_MIN` numbers or more are the machine's."""
    return SharedNoiseTable(size, seed, machine=size >= MACHINE_SHARE_MIN)
