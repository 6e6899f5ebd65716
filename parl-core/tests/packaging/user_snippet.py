"""Run by ``nox -s packaging`` in a venv holding only the parl-core and parl-algos-pg wheels."""

import sys

import parl
from parl.core.algorithm_base import AlgorithmBase
from parl.utils import logger

assert "paddle" not in sys.modules, "import parl must not import paddle"
names = parl.algorithms.names()
assert "PolicyGradient" in names, names
assert not any(m.startswith("parl_algos") for m in sys.modules), "names() imported a plugin"
PG = parl.algorithms.get("PolicyGradient")
from parl.algorithms import PolicyGradient  # noqa: E402

# Written once for both frameworks: PARL 2.x's framework-free AlgorithmBase, not paddle's
# parl.Algorithm.
assert PG is PolicyGradient and issubclass(PG, AlgorithmBase)
logger.info("registry works from wheels: %s", ", ".join(names))
