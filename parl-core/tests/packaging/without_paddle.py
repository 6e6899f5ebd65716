"""Run by ``nox -s packaging`` in a venv with the parl-core and parl-algos-pg wheels, no paddle.

What a GPU user meets before installing paddle's GPU build: the family is listed, and using it
or parl's paddle-backed classes is one error naming both paddle builds.
"""

import importlib.util

import parl
from parl.core.errors import PluginLoadError

assert importlib.util.find_spec("paddle") is None, "this check needs a venv without paddle"
assert "PPO" in parl.algorithms.names()
for use in (lambda: parl.algorithms.get("PPO"), lambda: parl.Model):
    try:
        use()
    except ImportError as exc:
        assert "paddlepaddle" in str(exc) and "paddlepaddle-gpu" in str(exc), exc
        assert not isinstance(exc, PluginLoadError) or "PPO" in str(exc), exc
    else:
        raise AssertionError("usable without paddle")
print("without paddle: the family is listed, and using it names both paddle builds")
