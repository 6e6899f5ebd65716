"""Run by ``nox -s packaging`` in a venv holding only the parl-core and parl-algos-pg wheels."""

import sys

import parl
from parl.utils import logger

assert "paddle" not in sys.modules, "import parl must not import paddle"
names = parl.algorithms.names()
assert "PolicyGradient" in names, names
assert not any(m.startswith("parl_algos") for m in sys.modules), "names() imported a plugin"
PG = parl.algorithms.get("PolicyGradient")
from parl.algorithms import PolicyGradient  # noqa: E402

assert PG is PolicyGradient and issubclass(PG, parl.Algorithm)
logger.info("registry works from wheels: %s", ", ".join(names))
