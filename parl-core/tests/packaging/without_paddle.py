"""Run by ``nox -s packaging`` in a venv with the parl-core and parl-algos-pg wheels, no paddle.

What a GPU user meets before installing paddle's GPU build: the family is listed and its
classes load (they are written once and import no framework), and building a network, or
using parl's paddle-backed classes, is one error naming both paddle builds.
"""

import importlib.util

import parl

assert importlib.util.find_spec("paddle") is None, "this check needs a venv without paddle"
assert "PPO" in parl.algorithms.names()
PPO = parl.algorithms.get("PPO")
from parl_algos_pg.models import DiscretePPOModel  # noqa: E402

for use in (lambda: DiscretePPOModel(4, 2), lambda: parl.Model):
    try:
        use()
    except ImportError as exc:
        assert "paddlepaddle" in str(exc) and "paddlepaddle-gpu" in str(exc), exc
    else:
        raise AssertionError("a network was built without paddle")
print("without paddle: the family is listed and loads, and a network names both paddle builds")
