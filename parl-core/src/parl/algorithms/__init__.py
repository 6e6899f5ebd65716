"""The algorithm registry: look algorithms up by name, whichever plugin provides them.

Algorithms are registered by installed distributions under the entry-point group
``parl.algorithms``; listing reads package metadata only, and a class is imported on first
lookup.

Examples:
    >>> import parl
    >>> "PolicyGradient" in parl.algorithms.names()  # with parl-algos-pg installed
    True
    >>> PG = parl.algorithms.get("PolicyGradient")
    >>> from parl.algorithms import PolicyGradient  # the same lookup
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from parl.algorithms._registry import ENTRY_POINT_GROUP, AlgorithmEntry, registry
from parl.core.errors import DuplicateAlgorithmError, PluginLoadError, UnknownAlgorithmError

if TYPE_CHECKING:
    from parl.core.algorithm import Algorithm

__all__ = [
    "ENTRY_POINT_GROUP",
    "AlgorithmEntry",
    "DuplicateAlgorithmError",
    "PluginLoadError",
    "UnknownAlgorithmError",
    "entries",
    "get",
    "names",
    "refresh",
]


def names() -> list[str]:
    """Return the sorted names of the installed algorithms, without importing any plugin."""
    return registry.names()


def entries() -> dict[str, list[AlgorithmEntry]]:
    """Return each name with the distribution(s) and entry-point value(s) that provide it."""
    return registry.entries()


def get(name: str) -> type[Algorithm]:
    """Return the algorithm class registered as ``name``, importing its plugin on first use.

    Raises:
        UnknownAlgorithmError: no installed plugin provides ``name`` (a ``LookupError``; the
            message suggests close names and, for first-party names, the ``pip install`` line).
        DuplicateAlgorithmError: two distributions provide ``name``.
        PluginLoadError: the plugin fails to import or is not a valid ``parl.Algorithm``.
    """
    return registry.get(name)


def refresh() -> None:
    """Re-read the installed plugins (after a ``pip install`` in a running interpreter)."""
    registry.refresh()


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "paddle":  # PARL 2.x's path: parl.algorithms.paddle.X
        return importlib.import_module("parl.algorithms.paddle")
    return _lookup(name)


def _lookup(name: str) -> type[Algorithm]:
    """The registry's ``name`` for a module ``__getattr__`` (this one or an alias module's)."""
    try:
        return registry.get(name)
    except UnknownAlgorithmError as exc:
        if _in_from_import():
            # ``from parl.algorithms import X``: Python turns an AttributeError into a bare
            # "cannot import name", so the helpful error is raised as it is (an ImportError).
            raise
        raise AttributeError(str(exc)) from exc


def _in_from_import() -> bool:
    """Whether the caller of the ``__getattr__`` that called :func:`_lookup` is a from-import."""
    caller = sys._getframe(3)
    return caller.f_code.co_name == "_handle_fromlist" and "importlib" in caller.f_code.co_filename


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(registry.names()))
