"""CMA-ES over a model's flat parameters, on the ``cma`` library."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any

from parl.core.config import AlgorithmConfig

import numpy as np
from numpy.typing import ArrayLike
from pydantic import Field, PositiveFloat

from parl_algos_es.base import EvolutionAlgorithm, Scalars
from parl_algos_es.population import check_slot, population_order, population_records
from parl_algos_es.records import SamplingRecord

with warnings.catch_warnings():
    # cma warns at import that matplotlib (for its plots, unused here) is missing.
    warnings.filterwarnings("ignore", message="Could not import matplotlib")
    import cma

__all__ = ["CMAES", "CMAESConfig"]

# The parts of a cma.CMAEvolutionStrategy (default options: full covariance, no bounds) that
# its next samples and updates depend on. A solver file holds exactly these; the test
# `test_cmaes_resumes_exactly` fails if one is missing.
_STATE_ARRAYS = ("mean", "pc", "adapt_sigma.ps", "sm.C", "sm.B", "sm.D")
_STATE_NUMBERS = (
    "sigma",
    "countiter",
    "countevals",
    "sm.count_tell",
    "sm.count_eigen",
    "sm.last_update",
    "adapt_sigma._ps_updated_iteration",
    "itereigenupdated",
)


def _get(obj: Any, path: str) -> Any:
    return functools.reduce(getattr, path.split("."), obj)


def _set(obj: Any, path: str, value: Any) -> None:
    *owner, attr = path.split(".")
    setattr(functools.reduce(getattr, owner, obj), attr, value)


class CMAESConfig(AlgorithmConfig):
    """Hyperparameters of :class:`CMAES`."""

    sigma0: PositiveFloat = 0.1
    """Initial step size σ₀ (the search starts at the model's parameters)."""
    population_size: int | None = Field(default=None, ge=2)
    """λ, candidates per generation; ``None`` takes cma's default ``4 + ⌊3 ln n⌋``."""


class CMAES(EvolutionAlgorithm):
    """Covariance Matrix Adaptation Evolution Strategy (Hansen & Ostermeier 2001; Hansen 2016,
    "The CMA Evolution Strategy: A Tutorial", https://arxiv.org/abs/1604.00772), driven through
    the ``cma`` library's ask-and-tell interface.

    ``alg.model`` holds the distribution's mean after every :meth:`tell`. The covariance is a
    full ``n × n`` matrix: suited to policies of up to a few thousand parameters. Returns are
    maximised (cma minimises their negation). Sampling draws from the algorithm's own
    generator, so a seed fixes the run without touching numpy's global state.

    Args:
        model: the policy; its trainable parameters are the search space.
        seed: seed of the generator cma samples with.
        config: a :class:`CMAESConfig` or a mapping; keyword options override it.
    """

    Config = CMAESConfig
    config: CMAESConfig

    def __init__(
        self,
        model: Any,
        *,
        seed: int | None = None,
        config: CMAESConfig | dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(model, seed=seed, config=config, **options)
        cma_options: dict[str, Any] = {
            "randn": self._standard_normal,
            "seed": math.nan,  # cma seeds numpy's global generator otherwise
            "verbose": -9,
            "verb_log": 0,
            "verb_disp": 0,
        }
        if self.config.population_size is not None:
            cma_options["popsize"] = self.config.population_size
        self.strategy = cma.CMAEvolutionStrategy(
            self.flat.get().astype(np.float64), self.config.sigma0, cma_options
        )
        self.generation = 0
        self.population = np.zeros((self.strategy.popsize, self.flat.size))
        self._asked = False

    def _standard_normal(self, *shape: int) -> np.ndarray:
        return self.rng.standard_normal(shape)

    def ask(self, n: int | None = None) -> list[SamplingRecord]:
        """Sample this generation's λ candidates (``n`` must be λ); asking again resamples."""
        size = self.strategy.popsize
        if n is not None and n != size:
            raise ValueError(f"CMA-ES samples whole generations: n must be {size} or None, got {n}")
        self.population = np.array(self.strategy.ask())
        self._asked = True
        return population_records(size, self.generation)

    def candidate(self, record: SamplingRecord) -> np.ndarray:
        """The float32 parameters of slot ``record.key`` of the current generation."""
        if not self._asked:
            raise RuntimeError("call ask() before candidate(): this generation has no samples yet")
        check_slot(record, self.generation, len(self.population))
        return self.population[record.key].astype(np.float32)

    def tell(self, records: Sequence[SamplingRecord], rewards: ArrayLike) -> dict[str, float]:
        """Update cma's mean, step size and covariance; ``alg.model`` becomes the new mean."""
        if not self._asked:
            raise RuntimeError("call ask() and evaluate its candidates before tell()")
        size = self.strategy.popsize
        slots = population_order(records, size, self.generation)
        returns = np.empty(size)
        returns[slots] = self._returns(rewards, (size,), "one return per record")
        self.strategy.tell(list(self.population), (-returns).tolist())
        self.flat.set(self.strategy.mean)
        self.generation += 1
        self._asked = False
        return {
            "reward_mean": float(returns.mean()),
            "reward_max": float(returns.max()),
            "sigma": float(self.strategy.sigma),
        }

    def _solver_arrays(self) -> dict[str, np.ndarray]:
        arrays = {path: np.asarray(_get(self.strategy, path)) for path in _STATE_ARRAYS}
        return {**arrays, "population": self.population}

    def _solver_scalars(self) -> Scalars:
        numbers: Scalars = {path: _get(self.strategy, path) for path in _STATE_NUMBERS}
        numbers["sigma"] = float(numbers["sigma"])
        return {**numbers, "generation": self.generation, "asked": int(self._asked)}

    def _check_solver(self, arrays: dict[str, np.ndarray], scalars: Scalars) -> None:
        """cma checks none of this: a σ <= 0 collapses the search, a negative iteration count
        or unsorted scales fail an assertion later, a covariance without positive scales or
        an eigenbasis that is not orthonormal gives NaN or wrongly shaped samples."""
        if not scalars["sigma"] > 0:
            raise ValueError(f"the step size sigma must be > 0, got {scalars['sigma']}")
        for name in _STATE_NUMBERS[1:]:
            floor = -1 if name == "adapt_sigma._ps_updated_iteration" else 0
            if scalars[name] < floor:
                raise ValueError(f"{name} must be >= {floor}, got {scalars[name]}")
        if scalars["generation"] < 0 or scalars["asked"] not in (0, 1):
            raise ValueError(
                f"generation must be >= 0 and asked 0 or 1, got {scalars['generation']} and "
                f"{scalars['asked']}"
            )
        scales, basis = arrays["sm.D"], arrays["sm.B"]
        if not (scales > 0).all() or (np.diff(scales) < 0).any():
            raise ValueError("the covariance's scales sm.D must be > 0 and in ascending order")
        if not np.allclose(basis @ basis.T, np.eye(len(basis)), atol=1e-6):
            raise ValueError("the covariance's eigenbasis sm.B must be orthonormal")
        covariance = arrays["sm.C"]
        if not np.allclose(covariance, covariance.T) or not (np.diag(covariance) > 0).all():
            raise ValueError("the covariance sm.C must be symmetric with a positive diagonal")

    def _warm_up(self) -> None:
        """Run one throw-away generation on a fresh strategy: cma creates part of its state in
        the first ``tell``, and a loaded state overwrites all that matters afterwards."""
        rng, self.rng = self.rng, np.random.default_rng(0)
        try:
            samples = self.strategy.ask()
            self.strategy.tell(samples, [0.0] * len(samples))
        finally:
            self.rng = rng

    def _load_solver(self, arrays: dict[str, np.ndarray], scalars: Scalars) -> None:
        if self.strategy.countiter == 0:
            self._warm_up()
        for path in _STATE_ARRAYS:
            _set(self.strategy, path, arrays[path].copy())
        for path in _STATE_NUMBERS:
            _set(self.strategy, path, scalars[path])
        self.population = arrays["population"].copy()
        self.generation = int(scalars["generation"])
        self._asked = bool(scalars["asked"])
        self.strategy._flgtelldone = not self._asked  # cma refuses a tell without an ask
        if self._asked:  # as ask() does: tell takes samples it knows as they are
            for sample in self.population:
                self.strategy.sent_solutions.insert(
                    sample, geno=sample.copy(), iteration=self.strategy.countiter
                )
        self.flat.set(self.strategy.mean)  # the model holds the mean, as after every tell
