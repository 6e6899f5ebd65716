"""IMPALA for PARL: V-trace, the ``IMPALA`` algorithm and an actor-learner harness on xparl.

Use the algorithm through the registry, as any plugin: ``parl.algorithms.get("IMPALA")``.
"""

from parl_algos_impala.impala import IMPALA, IMPALAConfig, VTraceLoss
from parl_algos_impala.vtrace import VTraceReturns, from_importance_weights

__all__ = ["IMPALA", "IMPALAConfig", "VTraceLoss", "VTraceReturns", "from_importance_weights"]
