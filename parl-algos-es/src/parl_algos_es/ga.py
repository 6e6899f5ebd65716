"""GA: a simple genetic algorithm over a model's flat parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parl.core.config import AlgorithmConfig

import numpy as np
from numpy.typing import ArrayLike
from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from parl_algos_es.base import EvolutionAlgorithm, Scalars
from parl_algos_es.population import check_slot, population_order, population_records
from parl_algos_es.records import SamplingRecord

__all__ = ["GA", "GAConfig"]


class GAConfig(AlgorithmConfig):
    """Hyperparameters of :class:`GA`."""

    population_size: int = Field(default=50, ge=2)
    """Candidates per generation."""
    parents: PositiveInt = 10
    """Truncation selection: the best ``parents`` candidates breed the next generation."""
    mutation_stdev: PositiveFloat = 0.02
    """σ of the Gaussian mutation added to a parent's parameters."""

    @model_validator(mode="after")
    def _parents_fit(self) -> GAConfig:
        if self.parents > self.population_size:
            raise ValueError(
                f"parents ({self.parents}) cannot exceed population_size ({self.population_size})"
            )
        return self


class GA(EvolutionAlgorithm):
    """A genetic algorithm with truncation selection and Gaussian mutation (as in Such et al.
    2017, "Deep Neuroevolution", https://arxiv.org/abs/1712.06567, without crossover).

    The first population is the model's parameters (slot 0) and ``population_size − 1``
    mutants of them. After each generation the best candidate (the elite) is kept unchanged in
    slot 0 and becomes ``alg.model``; every other slot is a uniformly chosen one of the best
    ``parents`` candidates plus ``N(0, mutation_stdev²)`` noise.

    Args:
        model: the policy; its trainable parameters are the genome.
        seed: seed of the generator for mutations and parent choice.
        config: a :class:`GAConfig` or a mapping; keyword options override it.
    """

    Config = GAConfig
    config: GAConfig

    def __init__(
        self,
        model: Any,
        *,
        seed: int | None = None,
        config: GAConfig | dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(model, seed=seed, config=config, **options)
        self.generation = 0
        start = np.broadcast_to(self.flat.get(), (self.config.population_size, self.flat.size))
        self.population = self._mutate(start)

    def _mutate(self, parents: np.ndarray) -> np.ndarray:
        """``parents`` with slot 0 kept and the other rows mutated."""
        noise = self.rng.standard_normal(parents[1:].shape, dtype=np.float32)
        children = parents[1:] + self.config.mutation_stdev * noise
        return np.concatenate([parents[:1], children]).astype(np.float32)

    def ask(self, n: int | None = None) -> list[SamplingRecord]:
        """One record per candidate of the current generation (``n`` must be the population)."""
        size = self.config.population_size
        if n is not None and n != size:
            raise ValueError(f"GA evaluates whole generations: n must be {size} or None, got {n}")
        return population_records(size, self.generation)

    def candidate(self, record: SamplingRecord) -> np.ndarray:
        """The parameters of slot ``record.key`` of the current generation."""
        check_slot(record, self.generation, len(self.population))
        return self.population[record.key].copy()

    def tell(self, records: Sequence[SamplingRecord], rewards: ArrayLike) -> dict[str, float]:
        """Select, keep the elite, mutate: the next generation (and ``alg.model`` = elite)."""
        size = self.config.population_size
        slots = population_order(records, size, self.generation)
        returns = np.empty(size)
        returns[slots] = self._returns(rewards, (size,), "one return per record")
        ranking = np.argsort(-returns, kind="stable")
        best = self.population[ranking[: self.config.parents]]
        chosen = self.rng.integers(0, len(best), size=size)
        chosen[0] = 0
        self.population = self._mutate(best[chosen])
        self.flat.set(self.population[0])
        self.generation += 1
        return {
            "reward_mean": float(returns.mean()),
            "reward_max": float(returns.max()),
            "parents_reward_mean": float(returns[ranking[: self.config.parents]].mean()),
        }

    def _solver_arrays(self) -> dict[str, np.ndarray]:
        return {"population": self.population}

    def _solver_scalars(self) -> Scalars:
        return {"generation": self.generation}

    def _check_solver(self, arrays: dict[str, np.ndarray], scalars: Scalars) -> None:
        if scalars["generation"] < 0:
            raise ValueError(f"the generation must be >= 0, got {scalars['generation']}")

    def _load_solver(self, arrays: dict[str, np.ndarray], scalars: Scalars) -> None:
        self.population = arrays["population"].astype(np.float32)
        self.generation = int(scalars["generation"])
