"""The algorithm registry: look algorithms up by name, whichever plugin provides them.

Algorithms are registered by installed distributions under one entry-point group per backend
(``parl.algorithms`` for paddle, ``parl.algorithms.torch`` for torch); a lookup takes the
selected backend's (:func:`parl.get_backend`) unless ``backend=`` names one. Listing reads
package metadata only, and a class is imported on first lookup.

Examples:
    >>> import parl
    >>> "PolicyGradient" in parl.algorithms.names()  # with parl-algos-pg installed
    True
    >>> PG = parl.algorithms.get("PolicyGradient")
    >>> from parl.algorithms import PolicyGradient  # the same lookup
    >>> parl.algorithms.names(backend="torch")  # doctest: +SKIP
    ['DDQN', 'DQN']
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from parl.algorithms._registry import ENTRY_POINT_GROUP, GROUPS, AlgorithmEntry, registry
from parl.core.errors import DuplicateAlgorithmError, PluginLoadError, UnknownAlgorithmError

if TYPE_CHECKING:
    from parl.core.base import AlgorithmBase as Algorithm

__all__ = [
    "ENTRY_POINT_GROUP",
    "GROUPS",
    "AlgorithmEntry",
    "DuplicateAlgorithmError",
    "PluginLoadError",
    "UnknownAlgorithmError",
    "entries",
    "get",
    "names",
    "refresh",
]


def names(backend: str | None = None) -> list[str]:
    """Return the sorted names of the installed algorithms, without importing any plugin.

    Args:
        backend: ``"paddle"`` or ``"torch"``; the selected backend by default.
    """
    return registry.names(backend)


def entries(backend: str | None = None) -> dict[str, list[AlgorithmEntry]]:
    """Return each name with the distribution(s) and entry-point value(s) that provide it."""
    return registry.entries(backend)


def get(name: str, backend: str | None = None) -> type[Algorithm]:
    """Return the algorithm class registered as ``name``, importing its plugin on first use.

    Args:
        name: the algorithm's name, e.g. ``"DQN"``.
        backend: ``"paddle"`` or ``"torch"``; the selected backend by default.

    Raises:
        UnknownAlgorithmError: no installed plugin provides ``name`` for the backend (a
            ``LookupError``; the message says which backend has it, suggests close names and,
            for first-party names, gives the ``pip install`` line).
        DuplicateAlgorithmError: two distributions provide ``name``.
        PluginLoadError: the plugin fails to import or is not a valid ``parl.Algorithm``.
    """
    return registry.get(name, backend)


def refresh() -> None:
    """Re-read the installed plugins (after a ``pip install`` in a running interpreter)."""
    registry.refresh()


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in GROUPS:  # PARL 2.x's paths: parl.algorithms.paddle.X, parl.algorithms.torch.X
        return importlib.import_module(f"parl.algorithms.{name}")
    return _lookup(name)


def _lookup(name: str, backend: str | None = None) -> type[Algorithm]:
    """The registry's ``name`` for a module ``__getattr__`` (this one or an alias module's)."""
    try:
        return registry.get(name, backend)
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
