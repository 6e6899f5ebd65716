"""PARL 2.x's ``parl.algorithms.paddle.impala.vtrace``: V-trace from ``parl-algos-impala``.

``from parl.algorithms.paddle.impala import vtrace`` gives :mod:`parl_algos_impala.vtrace`'s
``from_importance_weights`` and ``VTraceReturns`` (the one implementation), and says what to
install when that distribution is missing.
"""

from __future__ import annotations

try:
    from parl_algos_impala.vtrace import VTraceReturns, from_importance_weights
except ModuleNotFoundError as exc:
    if exc.name is None or not exc.name.startswith("parl_algos_impala"):
        raise
    raise ImportError(
        "parl.algorithms.paddle.impala.vtrace is V-trace of the IMPALA family, which is not "
        "installed: pip install parl-algos-impala"
    ) from exc

__all__ = ["VTraceReturns", "from_importance_weights"]
