"""The shared noise table: one block of Gaussian numbers per machine, addressed by index.

Evolution strategies perturb a parameter vector of ``dim`` numbers with Gaussian noise. Instead
of sending perturbations over the wire, every process builds the same table from the same seed
(numpy's PCG64 stream is the same on every machine) and a perturbation travels as the index of
its first number: ``table.get(index, dim)`` is ``table[index:index + dim]`` everywhere (Salimans
et al. 2017, § 2.1).

A table of :data:`MACHINE_SHARE_MIN` numbers or more lives once per machine and user, in shared
memory: the first process creates and fills it, the others map it read-only. Other accounts
can create files under the segment's name (``/dev/shm`` is writable by all), so a process opens
the name without following links and without blocking (a FIFO there answers at once), checks
on the open descriptor that it is an owner-only regular file of its own user and of the
table's size, waits a bounded time for it to be complete, and uses it only if its numbers are
the seed's (regenerated and compared in blocks); it builds a private table otherwise.

The creator starts a small watcher process, in a session of its own, that holds the read end
of a pipe whose write end only the creator (and its forked children) hold: when they are gone,
however they ended (``os._exit`` in an xparl job, SIGKILL of their process group), the pipe
closes and the watcher unlinks the name. Processes still attached keep their mapping, and the
next process creates a new segment.
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import operator
import os
import stat
import struct
import sys
import threading
import time
from pathlib import Path

from parl.core.validation import non_negative_int, positive_int

import numpy as np

__all__ = ["MACHINE_SHARE_MIN", "SharedNoiseTable", "shared_noise_table"]

MACHINE_SHARE_MIN = 1_000_000
"""Tables of at least this many numbers (4 MB) are shared by the processes of a machine."""
ATTACH_TIMEOUT_S = 60.0
"""How long a process waits for another to finish filling a table before building its own."""
_MAGIC = b"PARLNZ02"
_HEADER = struct.Struct("<8sQQB")  # magic, size, seed, ready flag
_OFFSET = 64  # the numbers start here (aligned)
_BLOCK = 1 << 20  # numbers regenerated at a time when checking a segment
_SHM_DIR = Path("/dev/shm")
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC if hasattr(os, "O_NOFOLLOW") else 0
# The watcher: reads its stdin until the creator's end closes, then unlinks the segment if the
# name still is the creator's file (same device and inode). -I -S: no site, no user paths.
_WATCHER = (
    "import os, sys\n"
    "sys.stdin.buffer.read()\n"
    "path, dev, ino = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "try:\n"
    "    info = os.lstat(path)\n"
    "    if (info.st_dev, info.st_ino) == (dev, ino):\n"
    "        os.unlink(path)\n"
    "except OSError:\n"
    "    pass\n"
)
_WATCHED: list[int] = []  # write ends of the watchers' pipes, held until this process ends


def _generate(size: int, seed: int, out: np.ndarray | None = None) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(size, dtype=np.float32, out=out)


def _segment_name(size: int, seed: int) -> str:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return f"parl_es_noise_{uid}_{seed}_{size}"


def _numbers(mapping: mmap.mmap, size: int) -> np.ndarray:
    return np.frombuffer(mapping, np.float32, size, _OFFSET)


def _watch(path: Path, fd: int) -> None:
    """Start the watcher that unlinks ``path`` once this process and its children are gone."""
    info = os.fstat(fd)
    read_end, write_end = os.pipe()
    try:
        os.posix_spawn(
            sys.executable,
            [
                sys.executable,
                "-I",
                "-S",
                "-c",
                _WATCHER,
                str(path),
                str(info.st_dev),
                str(info.st_ino),
            ],
            {},
            file_actions=[(os.POSIX_SPAWN_DUP2, read_end, 0)],
            setsid=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    _WATCHED.append(write_end)


def _create_segment(size: int, seed: int) -> tuple[np.ndarray, mmap.mmap] | None:
    """Create, fill and publish the machine's segment; None if the name exists or cannot be
    made (the caller then tries to attach, or builds a private table)."""
    path = _SHM_DIR / _segment_name(size, seed)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600)
    except OSError:
        return None
    try:
        _watch(path, fd)  # first: from here on, any exit unlinks the name
        os.ftruncate(fd, _OFFSET + 4 * size)
        mapping = mmap.mmap(fd, _OFFSET + 4 * size)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    finally:
        os.close(fd)
    numbers = _numbers(mapping, size)
    _generate(size, seed, out=numbers)
    mapping[: _HEADER.size] = _HEADER.pack(_MAGIC, size, seed, 0)
    mapping[_HEADER.size - 1] = 1  # ready: the header and the numbers are complete
    return numbers, mapping


def _open_own_segment(path: Path, nbytes: int) -> mmap.mmap | None:
    """Map ``path`` read-only if, on the open descriptor, it is an owner-only regular file of
    this user of exactly ``nbytes``; None for anything else (a FIFO, a directory, a link, a
    file of another account), without blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        mine = info.st_uid == os.getuid() and not stat.S_IMODE(info.st_mode) & 0o077
        if not (stat.S_ISREG(info.st_mode) and mine and info.st_size == nbytes):
            return None
        return mmap.mmap(fd, nbytes, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _is_the_seeds_noise(numbers: np.ndarray, seed: int) -> bool:
    """Whether ``numbers`` are exactly the table of ``seed``, regenerated block by block (a
    digest would prove only that nobody changed them after it was written)."""
    generator = np.random.default_rng(seed)
    for start in range(0, len(numbers), _BLOCK):
        block = numbers[start : start + _BLOCK]
        if not np.array_equal(block, generator.standard_normal(len(block), dtype=np.float32)):
            return False
    return True


def _attach_segment(size: int, seed: int, timeout: float) -> tuple[np.ndarray, mmap.mmap] | None:
    """Map the machine's segment read-only if it is this user's, complete and the seed's
    numbers; else None.

    It is opened as a file of ``/dev/shm`` rather than through ``SharedMemory``, which (before
    Python 3.13) would register it with this process's resource tracker, and a tracker unlinks
    what it tracks: only the creator's watcher removes the segment.
    """
    mapping = _open_own_segment(_SHM_DIR / _segment_name(size, seed), _OFFSET + 4 * size)
    if mapping is None:
        return None
    deadline = time.monotonic() + timeout
    while mapping[_HEADER.size - 1] != 1:  # its creator is still filling it
        if time.monotonic() > deadline:
            mapping.close()
            return None
        threading.Event().wait(0.01)
    magic, found_size, found_seed, _ = _HEADER.unpack(mapping[: _HEADER.size])
    numbers = _numbers(mapping, size)
    if (magic, found_size, found_seed) != (_MAGIC, size, seed) or not _is_the_seeds_noise(
        numbers, seed
    ):
        del numbers  # releases the mapping's buffer
        mapping.close()
        return None
    return numbers, mapping


def _machine_table(size: int, seed: int) -> tuple[np.ndarray, mmap.mmap] | None:
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
