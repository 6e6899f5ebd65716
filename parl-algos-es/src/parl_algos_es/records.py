"""Sampling records: the few numbers that name one candidate of an evolution strategy."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["SamplingRecord"]


@dataclass(frozen=True)
class SamplingRecord:
    """One candidate to evaluate, small enough to log or send instead of parameters.

    Attributes:
        key: ES: the start index of its perturbation in the shared noise table; CMA-ES and GA:
            its slot in the generation's population.
        sign: ES: ``+1`` or ``-1``, the side of the antithetic pair; ``+1`` otherwise.
        generation: the generation it was drawn in (CMA-ES and GA refuse a stale one).
    """

    key: int
    sign: int = 1
    generation: int = 0

    def __post_init__(self) -> None:
        for name in ("key", "sign", "generation"):
            value = getattr(self, name)
            try:
                object.__setattr__(self, name, operator.index(value))
            except TypeError:
                raise TypeError(
                    f"SamplingRecord.{name} must be an integer, got {value!r}"
                ) from None
        if self.sign not in (1, -1):
            raise ValueError(f"SamplingRecord.sign must be +1 or -1, got {self.sign}")
        if self.key < 0 or self.generation < 0:
            raise ValueError(f"SamplingRecord key and generation must be >= 0, got {self}")

    def to_dict(self) -> dict[str, int]:
        """The record as a JSON-ready dict (``{"key": …, "sign": …, "generation": …}``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SamplingRecord:
        """Rebuild a record from :meth:`to_dict`'s output, refusing unknown or missing fields."""
        if not isinstance(data, Mapping) or set(data) != {"key", "sign", "generation"}:
            raise ValueError(
                f"a sampling record needs exactly the fields key, sign and generation, got {data!r}"
            )
        return cls(data["key"], data["sign"], data["generation"])
