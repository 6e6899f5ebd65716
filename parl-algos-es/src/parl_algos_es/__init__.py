"""Evolution strategies for PARL: ``ES`` (OpenAI), ``CMAES`` (on ``cma``) and a simple ``GA``.

All three search over a ``parl.Model``'s flat parameters behind one ask/tell interface, which
:class:`ESAgent` wraps in EvoKit's ``add_noise`` / ``update`` workflow. Use the algorithms
through the registry, as any plugin: ``parl.algorithms.get("ES")``.
"""

from parl_algos_es.agent import ESAgent
from parl_algos_es.base import EvolutionAlgorithm
from parl_algos_es.cmaes import CMAES, CMAESConfig
from parl_algos_es.es import ES, ESConfig
from parl_algos_es.flat import FlatParameters
from parl_algos_es.ga import GA, GAConfig
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
    "FlatOptimizer",
    "FlatParameters",
    "GAConfig",
    "Momentum",
    "ObservationMoments",
    "ObservationStats",
    "SamplingRecord",
    "SharedNoiseTable",
    "centered_ranks",
    "make_optimizer",
    "shared_noise_table",
]
