"""What ES, CMA-ES and GA share: the ask/tell interface over a model's flat parameters.

A harness drives any of them the same way: ``records = alg.ask()``, evaluate
``alg.candidate(record)`` for each (on actors: set a policy's parameters to it and run episodes),
then ``alg.tell(records, returns)``. Returns are maximised. ``alg.model`` always holds the
current solution (ES: the centre, CMA-ES: the mean, GA: the elite), so weights, ``Agent.save``
and checkpoints work as for every PARL algorithm.

The search state beyond the model (optimizer moments, the CMA state, the GA population) is a
set of fixed-shape arrays and scalars. :attr:`EvolutionAlgorithm.solver_vector` and
:attr:`EvolutionAlgorithm.solver_scalars` expose it to parl-core's training checkpoints, and
:meth:`EvolutionAlgorithm.solver_state` / :meth:`EvolutionAlgorithm.plan_solver_restore` to
solver files; both check everything against the algorithm before changing anything.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from parl.core.neutral import Algorithm
from parl.core.ops import Tensor

import numpy as np
from numpy.typing import ArrayLike

from parl_algos_es.flat import FlatParameters
from parl_algos_es.records import SamplingRecord

__all__ = ["EvolutionAlgorithm", "Scalars"]

Scalars = dict[str, int | float]


class EvolutionAlgorithm(Algorithm):
    """Base class of the evolution strategies: sampling records in, returns back.

    Subclasses implement :meth:`ask`, :meth:`candidate`, :meth:`tell` and their search state
    (:meth:`_solver_arrays`, :meth:`_solver_scalars`, :meth:`_load_solver`). The search itself
    is numpy; only the policy is a framework's, paddle or torch (the model's).

    Args:
        model: the policy; its trainable parameters are the search space.
        seed: seed of the algorithm's own generator (which candidates it draws).
        config: a config object or mapping; keyword options override it.
    """

    checkpoint_state: ClassVar[tuple[str, ...]] = ("rng", "solver_vector", "solver_scalars")
    captured_methods: ClassVar[tuple[str, ...]] = ()  # numpy search: compile=True captures none

    def __init__(
        self,
        model: Any,
        *,
        seed: int | None = None,
        config: Any = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError(f"{type(self).__name__} needs a parl.Model to search over")
        super().__init__(model, config=config, **options)
        self.flat = FlatParameters(model)
        self.rng = np.random.default_rng(seed)

    # -- the interface a harness drives ---------------------------------------------------------

    def ask(self, n: int | None = None) -> list[SamplingRecord]:
        """Draw ``n`` candidates to evaluate (the configured population by default)."""
        raise NotImplementedError

    def candidate(self, record: SamplingRecord) -> np.ndarray:
        """The flat float32 parameters of the candidate ``record`` names."""
        raise NotImplementedError

    def tell(self, records: Sequence[SamplingRecord], rewards: ArrayLike) -> dict[str, float]:
        """Update from the returns of the candidates ``records`` name; return statistics."""
        raise NotImplementedError

    def predict(self, obs: Tensor) -> Tensor:
        """The current solution's output for a batch of observations (no perturbation)."""
        return self.model(obs)  # type: ignore[misc]

    # -- search state -----------------------------------------------------------------------------

    def _solver_arrays(self) -> dict[str, np.ndarray]:
        return {}

    def _solver_scalars(self) -> Scalars:
        return {}

    def _load_solver(self, arrays: dict[str, np.ndarray], scalars: Scalars) -> None:
        """Apply checked state (names, shapes and scalar types already match)."""

    def _check_solver(self, arrays: dict[str, np.ndarray], scalars: Scalars) -> None:
        """Refuse finite values the algorithm cannot run from (a negative step size, a step
        count below zero) with a ``ValueError`` naming the value and its range."""

    def solver_state(self) -> tuple[dict[str, np.ndarray], Scalars]:
        """The search state beyond the model: named arrays and named numbers (copies)."""
        return {k: np.array(v) for k, v in self._solver_arrays().items()}, self._solver_scalars()

    def plan_solver_restore(
        self, arrays: Mapping[str, Any], scalars: Mapping[str, Any], where: str
    ) -> Callable[[], None]:
        """Check a saved search state against this algorithm; return a function applying it.

        Raises:
            ValueError: an array or number is missing, unknown, of another shape or type, not
                finite, or outside what the algorithm can run from; ``where`` names the source
                in the message. Nothing is changed then.
        """
        current_arrays, current_scalars = self._solver_arrays(), self._solver_scalars()
        _same_names(current_arrays, arrays, "arrays", where)
        _same_names(current_scalars, scalars, "numbers", where)
        checked_arrays = {}
        for name, value in current_arrays.items():
            given = np.asarray(arrays[name])
            if given.dtype.kind not in "iuf" or given.shape != value.shape:
                raise ValueError(
                    f"{where}: solver array {name!r} is {given.dtype} {given.shape}, expected "
                    f"{value.dtype} {value.shape}; was it saved for another model or config?"
                )
            with np.errstate(over="ignore"):
                converted = given.astype(value.dtype)
            if not np.isfinite(converted).all():
                raise ValueError(
                    f"{where}: solver array {name!r} holds NaN or infinite values (or values "
                    f"beyond {value.dtype}'s range); the file is damaged"
                )
            checked_arrays[name] = converted
        checked_scalars = {
            name: _checked_number(name, scalars[name], current, where)
            for name, current in current_scalars.items()
        }
        try:
            self._check_solver(checked_arrays, checked_scalars)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
        return lambda: self._load_solver(checked_arrays, checked_scalars)

    def check_checkpoint_state(self, values: dict[str, Any]) -> None:
        """Check a checkpoint's solver vector and numbers together before any is set (a
        training checkpoint sets them one after the other, through their properties)."""
        scalars = _scalars_from_json(values["solver_scalars"])
        split = self._split_vector(values["solver_vector"])
        self.plan_solver_restore(split, scalars, "the checkpoint")

    @property
    def solver_vector(self) -> np.ndarray:
        """All solver arrays, raveled in name order into one float64 vector (for checkpoints)."""
        arrays = self._solver_arrays()
        parts = [np.asarray(arrays[k], dtype=np.float64).ravel() for k in sorted(arrays)]
        return np.concatenate(parts) if parts else np.zeros(0)

    @solver_vector.setter
    def solver_vector(self, vector: np.ndarray) -> None:
        split = self._split_vector(vector)
        self.plan_solver_restore(split, self._solver_scalars(), "the checkpoint")()

    def _split_vector(self, vector: np.ndarray) -> dict[str, np.ndarray]:
        """:attr:`solver_vector` cut back into the named arrays."""
        arrays = self._solver_arrays()
        expected = sum(a.size for a in arrays.values())
        if np.shape(vector) != (expected,):
            raise ValueError(
                f"the solver vector must have shape ({expected},), got {np.shape(vector)}"
            )
        split, offset = {}, 0
        for name in sorted(arrays):
            size = arrays[name].size
            split[name] = np.asarray(vector[offset : offset + size]).reshape(arrays[name].shape)
            offset += size
        return split

    @property
    def solver_scalars(self) -> str:
        """The solver's numbers as a JSON object (for checkpoints)."""
        return json.dumps(self._solver_scalars(), sort_keys=True)

    @solver_scalars.setter
    def solver_scalars(self, text: str) -> None:
        scalars = _scalars_from_json(text)
        arrays = {k: np.array(v) for k, v in self._solver_arrays().items()}
        self.plan_solver_restore(arrays, scalars, "the checkpoint")()

    def model_fingerprint(self) -> dict[str, Any]:
        """The model's class and parameter layout, which a solver file must match."""
        return {
            "class": type(self.model).__qualname__,
            "parameters": [[name, list(shape)] for name, shape in self.flat.layout()],
        }

    # -- helpers for subclasses -----------------------------------------------------------------

    def _returns(self, rewards: ArrayLike, shape: tuple[int, ...], what: str) -> np.ndarray:
        array = np.asarray(rewards)
        if array.dtype.kind not in "iuf":
            raise TypeError(f"rewards must be numbers, got an array of {array.dtype}")
        if array.shape != shape:
            raise ValueError(f"rewards must have shape {shape} ({what}), got {array.shape}")
        if not np.isfinite(array).all():
            raise ValueError("rewards hold NaN or infinite values; check the episodes")
        return array.astype(np.float64)


def _scalars_from_json(text: str) -> dict[str, Any]:
    try:
        scalars = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"the checkpoint's solver numbers are not JSON: {exc}") from exc
    if not isinstance(scalars, dict):
        raise ValueError("the checkpoint's solver numbers are not a JSON object")
    return scalars


def _checked_number(name: str, number: Any, current: int | float, where: str) -> int | float:
    """A saved solver number of the current one's type: an int in int64's range or a finite
    float (an int is taken for a float)."""
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise ValueError(f"{where}: solver number {name!r} is {number!r}, not a number")
    if isinstance(current, int):
        if not isinstance(number, int):
            raise ValueError(f"{where}: solver number {name!r} must be an int, got {number}")
        if not -(2**63) <= number < 2**63:
            raise ValueError(f"{where}: solver number {name!r} is outside int64's range")
        return number
    if isinstance(number, int) and abs(number) > 2**1023:
        raise ValueError(f"{where}: solver number {name!r} is outside float64's range")
    if not math.isfinite(number):
        raise ValueError(f"{where}: solver number {name!r} is {number}")
    return float(number)


def _same_names(
    expected: Mapping[str, Any], given: Mapping[str, Any], what: str, where: str
) -> None:
    if set(expected) != set(given):
        raise ValueError(
            f"{where}: solver {what} {sorted(given)} do not match this algorithm's "
            f"{sorted(expected)}; was it saved by another algorithm?"
        )
