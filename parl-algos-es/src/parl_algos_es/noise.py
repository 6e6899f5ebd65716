"""The shared noise table: one block of Gaussian numbers per process, addressed by index.

Evolution strategies perturb a parameter vector of ``dim`` numbers with Gaussian noise. Instead
of sending perturbations over the wire, every process builds the same table from the same seed
(numpy's PCG64 stream is the same on every machine) and a perturbation travels as the index of
its first number: ``table.get(index, dim)`` is ``table[index:index + dim]`` everywhere (Salimans
et al. 2017, § 2.1).
"""

from __future__ import annotations

import functools
import operator

from parl.core.validation import non_negative_int, positive_int

import numpy as np

__all__ = ["SharedNoiseTable", "shared_noise_table"]


class SharedNoiseTable:
    """``size`` float32 standard-normal numbers drawn once from ``seed``.

    Build it through :func:`shared_noise_table`, which keeps one table per ``(size, seed)`` in a
    process, so that a learner and its actors in one process share the memory.

    Args:
        size: how many numbers the table holds; perturbations of ``dim`` numbers start at the
            ``size - dim + 1`` indices ``0 … size - dim``.
        seed: seed of the generator that fills it; every process must use the same.
    """

    def __init__(self, size: int, seed: int) -> None:
        self.size = positive_int("noise table size", size)
        self.seed = non_negative_int("noise table seed", seed)
        self.noise = np.random.default_rng(self.seed).standard_normal(self.size, dtype=np.float32)
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
    """This process's noise table for ``(size, seed)``, created on first use and then reused."""
    return SharedNoiseTable(size, seed)
