"""A public kit for plugin authors: contract tests, conformance check, identity envs.

:class:`CooperativeIdentityEnv` is the multi-agent identity game for multi-agent families.

:class:`AlgorithmContract` is a pytest base class that gives an algorithm family the standard
test suite (smoke, identity-env learning, determinism, save/restore, checkpoint-resume, bad
input) from a few hooks; :func:`check_algorithm` checks the plugin contract of one class;
:func:`registered_algorithm` registers an algorithm temporarily.

Examples:
    >>> from parl.testing import IdentityEnv, check_algorithm, registered_algorithm
    >>> env = IdentityEnv(n=3)
    >>> env.reset(seed=0)[0].shape
    (3,)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from parl.core.paddle.algorithm import Algorithm
    from parl.testing.conformance import ConformanceError, check_algorithm
    from parl.testing.contract import (
        AlgorithmContract,
        BadInput,
        identity_score,
        same_random_draws,
        training_state,
    )
    from parl.testing.envs import CooperativeIdentityEnv, IdentityEnv, IdentityEnvBox
    from parl.testing.models import LinearModel

__all__ = [
    "AlgorithmContract",
    "BadInput",
    "ConformanceError",
    "CooperativeIdentityEnv",
    "IdentityEnv",
    "IdentityEnvBox",
    "LinearModel",
    "check_algorithm",
    "identity_score",
    "registered_algorithm",
    "same_random_draws",
    "training_state",
]

_LAZY = {
    "AlgorithmContract": "parl.testing.contract",
    "BadInput": "parl.testing.contract",
    "identity_score": "parl.testing.contract",
    "same_random_draws": "parl.testing.contract",
    "training_state": "parl.testing.contract",
    "ConformanceError": "parl.testing.conformance",
    "check_algorithm": "parl.testing.conformance",
    "CooperativeIdentityEnv": "parl.testing.envs",
    "IdentityEnv": "parl.testing.envs",
    "IdentityEnvBox": "parl.testing.envs",
    "LinearModel": "parl.testing.models",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


@contextmanager
def registered_algorithm(name: str, cls: type[Algorithm]) -> Iterator[type[Algorithm]]:
    """Make ``cls`` available as ``parl.algorithms.get(name)`` inside the ``with`` block."""
    from parl.algorithms._registry import registry, runs_on

    registry.register(name, cls)
    try:
        yield cls
    finally:
        for backend in runs_on(cls):
            registry.unregister(name, backend)
