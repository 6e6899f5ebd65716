"""Run by ``nox -s packaging`` after ``parl-utils`` is uninstalled: core stands on its own."""

import importlib

import parl

assert "PolicyGradient" in parl.algorithms.names()
assert issubclass(parl.Model, importlib.import_module("paddle").nn.Layer)
try:
    importlib.import_module("parl.utils")
except ModuleNotFoundError as exc:
    assert "comes with the distribution 'parl-utils'" in str(exc), exc
    assert "pip install ./parl-utils" in str(exc), exc
else:
    raise AssertionError("parl.utils still importable after uninstalling parl-utils")
print("parl-core works without parl-utils; importing parl.utils names what to install")
