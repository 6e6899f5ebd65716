"""ES: OpenAI's evolution strategies with antithetic sampling from a shared noise table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parl.core.config import AlgorithmConfig
from parl.core.validation import positive_int

import numpy as np
from numpy.typing import ArrayLike
from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from parl_algos_es.base import EvolutionAlgorithm, Scalars
from parl_algos_es.noise import SharedNoiseTable, shared_noise_table
from parl_algos_es.optimizers import OptimizerName, make_optimizer
from parl_algos_es.records import SamplingRecord
from parl_algos_es.shaping import centered_ranks

__all__ = ["ES", "ESConfig", "weighted_noise_sum"]


class ESConfig(AlgorithmConfig):
    """Hyperparameters of :class:`ES` (defaults: PARL's ES example and Salimans et al.)."""

    noise_stdev: PositiveFloat = 0.02
    """σ: standard deviation of the parameter perturbations."""
    stepsize: PositiveFloat = 0.01
    """Learning rate of the optimizer."""
    l2_coeff: NonNegativeFloat = 0.005
    """Weight decay: ``l2_coeff · θ`` is added to the descent direction."""
    optimizer: OptimizerName = "adam"
    """The optimizer over the flat parameters: ``"sgd"``, ``"momentum"`` or ``"adam"``."""
    momentum: float = Field(default=0.9, ge=0, lt=1)
    """μ of the momentum optimizer."""
    beta1: float = Field(default=0.9, ge=0, lt=1)
    """β₁ of Adam."""
    beta2: float = Field(default=0.999, ge=0, lt=1)
    """β₂ of Adam."""
    epsilon: PositiveFloat = 1e-8
    """ε of Adam."""
    population_size: PositiveInt = Field(default=40, multiple_of=2)
    """Candidates per generation when ``ask()`` is called without a count (pairs × 2)."""
    noise_table_size: PositiveInt = 25_000_000
    """Numbers in the shared noise table (float32: 100 MB by default); must exceed the
    parameter count."""
    noise_table_seed: int = Field(default=123, ge=0)
    """Seed of the shared noise table; learner and actors must use the same."""


def weighted_noise_sum(
    table: SharedNoiseTable, indices: np.ndarray, weights: np.ndarray, dim: int, batch: int = 500
) -> np.ndarray:
    """``Σᵢ weights[i] · table.get(indices[i], dim)`` in float32, ``batch`` rows at a time."""
    total = np.zeros(dim, dtype=np.float32)
    for start in range(0, len(indices), batch):
        rows = np.stack([table.get(int(i), dim) for i in indices[start : start + batch]])
        total += weights[start : start + batch].astype(np.float32) @ rows
    return total


class ES(EvolutionAlgorithm):
    """Evolution Strategies (Salimans, Ho, Chen, Sidor & Sutskever 2017,
    https://arxiv.org/abs/1703.03864), as PARL's ``examples/ES`` uses it.

    Each generation evaluates antithetic pairs ``θ ± σ·εᵢ`` whose noise ``εᵢ`` is a slice of the
    shared noise table, named by its start index. The returns ``[n_pairs, 2]`` are replaced by
    their centred ranks ``R``, the gradient estimate is
    ``g = Σᵢ (R[i, 0] − R[i, 1]) · εᵢ / (2·n_pairs)`` (σ is left in the step size, as in the
    paper's code), and the optimizer descends ``−g + l2_coeff·θ``.

    Args:
        model: the policy; its trainable parameters are ``θ``.
        seed: seed of the generator that draws noise indices.
        config: an :class:`ESConfig` or a mapping; keyword options override it.

    Examples:
        >>> from parl.testing import LinearModel
        >>> alg = ES(LinearModel(3, 1), seed=0, noise_table_size=10_000, population_size=4)
        >>> records = alg.ask()
        >>> [r.sign for r in records]
        [1, -1, 1, -1]
        >>> stats = alg.tell(records, [1.0, 0.0, 0.5, 0.7])
    """

    Config = ESConfig
    config: ESConfig

    def __init__(
        self,
        model: Any,
        *,
        seed: int | None = None,
        config: ESConfig | dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(model, seed=seed, config=config, **options)
        cfg = self.config
        self.noise = shared_noise_table(cfg.noise_table_size, cfg.noise_table_seed)
        if self.flat.size > cfg.noise_table_size:
            raise ValueError(
                f"the model has {self.flat.size} parameters, more than noise_table_size "
                f"{cfg.noise_table_size}; raise noise_table_size"
            )
        self.optimizer = make_optimizer(
            cfg.optimizer,
            self.flat.size,
            cfg.stepsize,
            momentum=cfg.momentum,
            beta1=cfg.beta1,
            beta2=cfg.beta2,
            epsilon=cfg.epsilon,
        )

    def ask(self, n: int | None = None) -> list[SamplingRecord]:
        """``n`` candidates (even; the config's ``population_size`` by default) as ``n/2``
        antithetic pairs: records ``(index, +1)`` and ``(index, −1)`` side by side."""
        count = self.config.population_size if n is None else positive_int("n", n)
        if count % 2:
            raise ValueError(f"ES draws antithetic pairs: n must be even, got {n!r}")
        records = []
        for _ in range(count // 2):
            index = self.noise.sample_index(self.rng, self.flat.size)
            records += [SamplingRecord(index, 1), SamplingRecord(index, -1)]
        return records

    def candidate(self, record: SamplingRecord) -> np.ndarray:
        """``θ + sign·σ·ε`` for the noise ``ε`` that starts at ``record.key``."""
        noise = self.noise.get(record.key, self.flat.size)
        return self.flat.get() + record.sign * self.config.noise_stdev * noise

    def tell(self, records: Sequence[SamplingRecord], rewards: ArrayLike) -> dict[str, float]:
        """Pair the records up by noise index and call :meth:`learn`.

        Every index must appear exactly twice, once with each sign (several pairs may share an
        index). ``rewards[i]`` is the return of ``records[i]``.
        """
        returns = self._returns(rewards, (len(records),), "one return per record")
        positive: dict[int, list[float]] = {}
        negative: dict[int, list[float]] = {}
        for record, value in zip(records, returns, strict=True):
            (positive if record.sign == 1 else negative).setdefault(record.key, []).append(value)
        unpaired = sorted(
            key
            for key in positive.keys() | negative.keys()
            if len(positive.get(key, ())) != len(negative.get(key, ()))
        )
        if unpaired:
            raise ValueError(
                f"ES needs both sides of every antithetic pair; noise indices {unpaired[:5]} "
                "lack their +1 or -1 record"
            )
        indices = [key for key, values in positive.items() for _ in values]
        pairs = [
            [p, n] for key in positive for p, n in zip(positive[key], negative[key], strict=True)
        ]
        return self.learn(np.array(indices, dtype=np.int64), np.array(pairs))

    def learn(self, noise_indices: ArrayLike, rewards: ArrayLike) -> dict[str, float]:
        """One ES update from antithetic pairs.

        Args:
            noise_indices: ``[n_pairs]`` start indices into the noise table.
            rewards: ``[n_pairs, 2]`` returns of ``θ + σε`` (column 0) and ``θ − σε`` (column 1).

        Returns:
            ``grad_norm`` (of ``g``), ``update_ratio`` (‖Δθ‖/‖θ‖), ``reward_mean``,
            ``reward_max``.

        Raises:
            IndexError: a noise index is outside the table.
            ValueError: ``rewards`` is not ``[n_pairs, 2]`` or holds NaN/infinity.
        """
        indices = self.noise.check_indices(np.atleast_1d(np.asarray(noise_indices)), self.flat.size)
        if indices.ndim != 1:
            raise ValueError(f"noise_indices must be one-dimensional, got shape {indices.shape}")
        returns = self._returns(
            rewards, (len(indices), 2), "one row per noise index: returns of +σε and −σε"
        )
        shaped = centered_ranks(returns)
        grad = (
            weighted_noise_sum(self.noise, indices, shaped[:, 0] - shaped[:, 1], self.flat.size)
            / returns.size
        )
        theta = self.flat.get()
        new_theta = self.optimizer.step(theta, -grad + self.config.l2_coeff * theta)
        self.flat.set(new_theta)
        return {
            "grad_norm": float(np.linalg.norm(grad)),
            "update_ratio": float(
                np.linalg.norm(new_theta - theta) / max(np.linalg.norm(theta), 1e-12)
            ),
            "reward_mean": float(returns.mean()),
            "reward_max": float(returns.max()),
        }

    def _solver_arrays(self) -> dict[str, np.ndarray]:
        return self.optimizer.state()[0]

    def _solver_scalars(self) -> Scalars:
        return {"optimizer_steps": self.optimizer.steps}

    def _check_solver(self, arrays: dict[str, np.ndarray], scalars: Scalars) -> None:
        self.optimizer.check_state(arrays, int(scalars["optimizer_steps"]))

    def _load_solver(self, arrays: dict[str, np.ndarray], scalars: Scalars) -> None:
        self.optimizer.load_state(arrays, int(scalars["optimizer_steps"]))
