"""A public kit for plugin authors: conformance check, identity envs, temporary registration.

Examples:
    >>> from parl.testing import IdentityEnv, check_algorithm, registered_algorithm
    >>> env = IdentityEnv(n=3)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parl.core.algorithm import Algorithm
    from parl.testing.conformance import ConformanceError, check_algorithm
    from parl.testing.envs import IdentityEnv, IdentityEnvBox

__all__ = [
    "ConformanceError",
    "IdentityEnv",
    "IdentityEnvBox",
    "check_algorithm",
    "registered_algorithm",
]

_LAZY = {
    "ConformanceError": "parl.testing.conformance",
    "check_algorithm": "parl.testing.conformance",
    "IdentityEnv": "parl.testing.envs",
    "IdentityEnvBox": "parl.testing.envs",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'parl.testing' has no attribute {name!r}")


@contextmanager
def registered_algorithm(name: str, cls: type[Algorithm]) -> Iterator[type[Algorithm]]:
    """Make ``cls`` available as ``parl.algorithms.get(name)`` inside the ``with`` block."""
    from parl.algorithms._registry import registry

    registry.register(name, cls)
    try:
        yield cls
    finally:
        registry.unregister(name)
