"""IMPALA for PARL: V-trace, the ``IMPALA`` algorithm and an actor-learner harness on xparl.

Use the algorithm through the registry, as any plugin: ``parl.algorithms.get("IMPALA")``. The
models and env builders that ``examples/IMPALA/train.py`` uses are in
:mod:`parl_algos_impala.models`.
"""

from parl_algos_impala.impala import IMPALA, IMPALAConfig, VTraceLoss
from parl_algos_impala.models import AtariModel, MLPModel, make_env, make_model
from parl_algos_impala.vtrace import VTraceReturns, from_importance_weights

__all__ = [
    "IMPALA",
    "AtariModel",
    "IMPALAConfig",
    "MLPModel",
    "VTraceLoss",
    "VTraceReturns",
    "from_importance_weights",
    "make_env",
    "make_model",
]
