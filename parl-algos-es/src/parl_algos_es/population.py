"""Bookkeeping of a generation whose candidates are stored vectors (CMA-ES and GA)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from parl_algos_es.records import SamplingRecord

__all__ = ["check_generation", "check_slot", "population_order", "population_records"]


def population_records(size: int, generation: int) -> list[SamplingRecord]:
    """One record per slot of the population of ``generation``."""
    return [SamplingRecord(slot, 1, generation) for slot in range(size)]


def check_generation(records: Sequence[SamplingRecord], generation: int) -> None:
    """Refuse records drawn in another generation than the current ``generation``."""
    stale = sorted({r.generation for r in records} - {generation})
    if stale:
        raise ValueError(
            f"records of generation {stale} reached generation {generation}; use the "
            "candidates this generation's ask() gave"
        )


def check_slot(record: SamplingRecord, generation: int, size: int) -> None:
    """Refuse a record of another generation or a slot outside a population of ``size``."""
    check_generation([record], generation)
    if not 0 <= record.key < size:
        raise IndexError(f"slot {record.key} is outside the population of {size}")


def population_order(records: Sequence[SamplingRecord], size: int, generation: int) -> np.ndarray:
    """The slot of every record, after checking they name each slot of ``generation`` once.

    Raises:
        ValueError: a record is from another generation, a slot is missing, repeated or out of
            range.
    """
    check_generation(records, generation)
    slots = np.array([r.key for r in records], dtype=np.int64)
    if sorted(slots.tolist()) != list(range(size)):
        raise ValueError(
            f"tell needs the return of every one of the {size} candidates exactly once, got "
            f"slots {sorted(slots.tolist())[:10]}{'…' if len(slots) > 10 else ''}"
        )
    return slots
