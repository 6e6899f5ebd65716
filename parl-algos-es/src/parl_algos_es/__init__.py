"""Evolution strategies for PARL: ``ES`` (OpenAI), ``CMAES`` (on ``cma``) and a simple ``GA``.

All three search over a ``parl.Model``'s flat parameters behind one ask/tell interface, which
:class:`ESAgent` wraps in EvoKit's ``add_noise`` / ``update`` workflow. The search is numpy;
the policy is a paddle or a torch network (``MLPPolicy(..., backend="torch")``), as EvoKit's
seed chapter promises. Use the algorithms through the registry, as any plugin:
``parl.algorithms.get("ES")``.

Names load on first use, so that ``parl_algos_es.noise`` (the shared noise table) and the other
numpy-only modules import without a framework, in actors that only evaluate candidates too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from parl_algos_es.agent import ESAgent
    from parl_algos_es.base import EvolutionAlgorithm
    from parl_algos_es.cmaes import CMAES, CMAESConfig
    from parl_algos_es.es import ES, ESConfig
    from parl_algos_es.flat import FlatParameters
    from parl_algos_es.ga import GA, GAConfig
    from parl_algos_es.harness import EvolutionHarness, GenerationTimeoutError
    from parl_algos_es.models import MLPPolicy
    from parl_algos_es.noise import SharedNoiseTable, shared_noise_table
    from parl_algos_es.obs_stats import ObservationMoments, ObservationStats
    from parl_algos_es.optimizers import SGD, Adam, FlatOptimizer, Momentum, make_optimizer
    from parl_algos_es.records import SamplingRecord
    from parl_algos_es.shaping import centered_ranks

__all__ = [
    "CMAES",
    "ES",
    "GA",
    "SGD",
    "Adam",
    "CMAESConfig",
    "ESAgent",
    "ESConfig",
    "EvolutionAlgorithm",
    "EvolutionHarness",
    "FlatOptimizer",
    "FlatParameters",
    "GAConfig",
    "GenerationTimeoutError",
    "MLPPolicy",
    "Momentum",
    "ObservationMoments",
    "ObservationStats",
    "SamplingRecord",
    "SharedNoiseTable",
    "centered_ranks",
    "make_optimizer",
    "shared_noise_table",
]

_MODULES = {
    "ESAgent": "agent",
    "EvolutionAlgorithm": "base",
    "CMAES": "cmaes",
    "CMAESConfig": "cmaes",
    "ES": "es",
    "ESConfig": "es",
    "FlatParameters": "flat",
    "GA": "ga",
    "GAConfig": "ga",
    "EvolutionHarness": "harness",
    "GenerationTimeoutError": "harness",
    "MLPPolicy": "models",
    "SharedNoiseTable": "noise",
    "shared_noise_table": "noise",
    "ObservationMoments": "obs_stats",
    "ObservationStats": "obs_stats",
    "SGD": "optimizers",
    "Adam": "optimizers",
    "FlatOptimizer": "optimizers",
    "Momentum": "optimizers",
    "make_optimizer": "optimizers",
    "SamplingRecord": "records",
    "centered_ranks": "shaping",
}


__getattr__ = lazy_attributes(
    __name__, {name: f"parl_algos_es.{module}" for name, module in _MODULES.items()}
)


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])
