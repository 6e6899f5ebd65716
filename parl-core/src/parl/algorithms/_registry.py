"""The algorithm registry: entry points of one group per backend, loaded on demand.

``parl.algorithms`` holds the paddle implementations (the group's name is older than the second
backend, and every paddle plugin written so far uses it), ``parl.algorithms.torch`` the torch
ones. A class written once for both (:class:`parl.core.neutral.Algorithm`) is registered under
one name in each group; a name is looked up in the selected backend's group
(:func:`parl.get_backend`) or in the one asked for.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from parl.core.backend import BACKENDS, get_backend
from parl.core.errors import (
    BackendError,
    DuplicateAlgorithmError,
    PluginLoadError,
    UnknownAlgorithmError,
    framework_missing,
)
from parl.plugins._entry_points import EntryPoint, entry_points, origin

if TYPE_CHECKING:
    from parl.core.base import AlgorithmBase as Algorithm

ENTRY_POINT_GROUP = "parl.algorithms"
GROUPS: dict[str, str] = {"paddle": ENTRY_POINT_GROUP, "torch": "parl.algorithms.torch"}
"""The entry-point group of each backend's algorithms."""


def selected_backend(backend: str | None = None) -> str:
    """``backend`` checked, or the selected one; with no framework installed, paddle's group.

    Listing reads metadata only, so it works before any framework is installed (and the
    error comes when a class is loaded, naming what to install).
    """
    if backend is not None:
        if backend not in GROUPS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        return backend
    try:
        return get_backend()
    except BackendError:
        import os

        if os.environ.get("PARL_BACKEND", "").strip():
            raise
        return "paddle"


# The first-party families this repository builds, and the algorithms each ships (or will
# ship: parl-algos-ac and parl-algos-impala are being built), for install hints.
FAMILIES: dict[str, tuple[str, ...]] = {
    "parl-algos-dqn": ("DQN", "DDQN"),
    "parl-algos-pg": ("PolicyGradient", "PPO"),
    "parl-algos-ac": ("A2C", "DDPG", "TD3", "SAC", "OAC", "CQL", "IQL", "DT"),
    "parl-algos-impala": ("IMPALA",),
    "parl-algos-es": ("ES", "CMAES", "GA"),
    "parl-algos-marl": ("MADDPG", "QMIX", "MAPPO", "COMA"),
}
# PARL 2.x algorithms that no family ships (yet), with the family they would belong to.
PARL2_ONLY: dict[str, str] = {
    "A3C": "parl-algos-ac",  # PARL 2.x fluid
}
FIRST_PARTY: dict[str, str] = {
    **{name: family for family, names in FAMILIES.items() for name in names},
    **PARL2_ONLY,
}


def _installed_version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


@dataclass(frozen=True)
class AlgorithmEntry:
    """One registered algorithm: its name, where it lives, and which distribution ships it."""

    name: str
    value: str
    distribution: str
    version: str

    @classmethod
    def from_entry_point(cls, entry_point: EntryPoint) -> AlgorithmEntry:
        distribution, version = origin(entry_point)
        return cls(entry_point.name, entry_point.value, distribution, version)


class Registry:
    """(backend, name) → algorithm class, read from package metadata once and cached until
    :meth:`refresh`."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._entries: dict[str, dict[str, list[AlgorithmEntry]]] = {}
        self._extra: dict[tuple[str, str], type[Algorithm]] = {}
        self._loaded: dict[tuple[str, str], type[Algorithm]] = {}

    def refresh(self) -> None:
        """Forget the cached scan and loaded classes; the next lookup re-reads the metadata."""
        with self._lock:
            self._entries.clear()
            self._loaded.clear()

    def _scan(self, backend: str) -> dict[str, list[AlgorithmEntry]]:
        with self._lock:
            if backend not in self._entries:
                entries: dict[str, list[AlgorithmEntry]] = {}
                seen: set[tuple[str, str, str]] = set()
                for entry_point in entry_points(group=GROUPS[backend]):
                    entry = AlgorithmEntry.from_entry_point(entry_point)
                    key = (entry.name, entry.value, entry.distribution)
                    if key not in seen:  # the same dist found twice on sys.path
                        seen.add(key)
                        entries.setdefault(entry.name, []).append(entry)
                self._entries[backend] = entries
            return self._entries[backend]

    def entries(self, backend: str | None = None) -> dict[str, list[AlgorithmEntry]]:
        """Return every name of ``backend`` with the entries that provide it (metadata only)."""
        return {name: list(found) for name, found in self._scan(selected_backend(backend)).items()}

    def names(self, backend: str | None = None) -> list[str]:
        """Return the sorted names of ``backend``'s algorithms, importing no plugin."""
        chosen = selected_backend(backend)
        with self._lock:
            extra = {name for (owner, name) in self._extra if owner == chosen}
            return sorted(set(self._scan(chosen)) | extra)

    def get(self, name: str, backend: str | None = None) -> type[Algorithm]:
        """Import, validate and return ``backend``'s algorithm class registered as ``name``.

        Raises:
            UnknownAlgorithmError: no plugin registers ``name`` for ``backend`` (the message
                says which backend has it, if one does).
            DuplicateAlgorithmError: two distributions register ``name``.
            PluginLoadError: the plugin fails to import or is not a valid algorithm.
        """
        chosen = selected_backend(backend)
        key = (chosen, name)
        with self._lock:
            if key in self._extra:
                return self._extra[key]
            if key in self._loaded:
                return self._loaded[key]
            found = self._scan(chosen).get(name)
            if not found:
                raise UnknownAlgorithmError(self._unknown_message(name, chosen))
            if len(found) > 1:
                owners = ", ".join(f"{e.distribution}=={e.version} ({e.value})" for e in found)
                raise DuplicateAlgorithmError(
                    f"algorithm {name!r} is registered by more than one distribution: {owners}; "
                    "uninstall one of them"
                )
            cls = _load(found[0], chosen)
            self._loaded[key] = cls
            return cls

    def register(self, name: str, cls: type[Algorithm]) -> None:
        """Register ``cls`` as ``name`` of its backend, in this process only."""
        validate_algorithm_class(cls, f"{cls.__module__}:{cls.__qualname__}")
        backends = runs_on(cls)
        with self._lock:
            for backend in backends:
                if (backend, name) in self._extra or name in self._scan(backend):
                    raise DuplicateAlgorithmError(
                        f"algorithm {name!r} is already registered for {backend}"
                    )
            for backend in backends:
                self._extra[(backend, name)] = cls

    def unregister(self, name: str, backend: str | None = None) -> None:
        """Remove a name added with :meth:`register` (of ``backend``, or of either)."""
        with self._lock:
            keys = [k for k in self._extra if k[1] == name and backend in (None, k[0])]
            if not keys:
                raise UnknownAlgorithmError(f"{name!r} was not registered with register()")
            for key in keys:
                del self._extra[key]

    def _unknown_message(self, name: str, backend: str) -> str:
        elsewhere = [other for other in GROUPS if other != backend and name in self.names(other)]
        if elsewhere:
            have = ", ".join(sorted(self.names(backend))) or "(none)"
            return (
                f"no {backend} implementation of {name!r} is installed; {name} is installed for "
                f"{' and '.join(elsewhere)} only (the {backend} algorithms installed: {have}). "
                f"Use parl.algorithms.get({name!r}, backend={elsewhere[0]!r}) with the "
                f"{elsewhere[0]} classes, or run with PARL_BACKEND={elsewhere[0]}."
            )
        installed = self.names(backend)
        # Typos are matched against installed names; a wrong case also against first-party ones.
        close = difflib.get_close_matches(name, set(installed) - {name}, n=3, cutoff=0.6)
        same_but_case = {n.lower(): n for n in (set(installed) | set(FIRST_PARTY)) - {name}}
        meant = same_but_case.get(name.lower(), name)
        if meant != name and meant not in close:
            close.insert(0, meant)
        lines = [f"no algorithm named {name!r} is installed (backend {backend})."]
        if close:
            lines.append(f"Did you mean {' or '.join(repr(c) for c in close)}?")
        lines.append(f"Installed algorithms: {', '.join(installed) if installed else '(none)'}.")
        family = FIRST_PARTY.get(meant)
        if family is not None and meant not in installed:
            lines.append(self._family_hint(meant, family, backend))
        return " ".join(lines)

    def _family_hint(self, name: str, family: str, backend: str) -> str:
        version = _installed_version(family)
        if version is not None:
            provided = sorted(
                e.name for e in self._installed_entries(backend) if e.distribution == family
            )
            return (
                f"{name} belongs to the {family} family, which is installed ({family} {version}) "
                f"but does not provide it for {backend}; it provides "
                f"{', '.join(provided) or 'nothing'} there."
            )
        if name in PARL2_ONLY:
            return (
                f"{name} is a PARL 2.x algorithm that no distribution of this PARL provides yet "
                f"(it would belong to {family})."
            )
        return (
            f"{name} is provided by the {family} distribution: pip install {family} (from a "
            f"checkout of the PARL repository: pip install ./{family})."
        )

    def _installed_entries(self, backend: str) -> list[AlgorithmEntry]:
        return [entry for found in self._scan(backend).values() for entry in found]


def runs_on(cls: type) -> tuple[str, ...]:
    """The frameworks an algorithm class runs on: its ``backends`` (a class written once for
    both), else its one ``backend``'s name; empty for a class that names neither."""
    backends = getattr(cls, "backends", None)
    if backends is not None:
        return tuple(backends)
    backend = getattr(cls, "backend", None)
    return (backend.name,) if backend is not None else ()


def validate_algorithm_class(obj: object, where: str, backend: str | None = None) -> None:
    """Raise :class:`PluginLoadError` unless ``obj`` is an Algorithm with a pydantic ``Config``.

    Args:
        obj: the object an entry point resolved to.
        where: where it came from, for the message.
        backend: the backend it must run on (its entry-point group's), if any.
    """
    from parl.core.base import AlgorithmBase

    from pydantic import BaseModel

    if not (isinstance(obj, type) and issubclass(obj, AlgorithmBase)):
        raise PluginLoadError(f"{where} is {obj!r}, not a subclass of parl.Algorithm")
    backends = runs_on(obj)
    if not backends:
        raise PluginLoadError(
            f"{where}: {obj.__name__} subclasses no backend's Algorithm; subclass "
            "parl.core.paddle.Algorithm, parl.core.torch.Algorithm or (for both) "
            "parl.core.neutral.Algorithm"
        )
    if backend is not None and backend not in backends:
        raise PluginLoadError(
            f"{where} is registered in the {GROUPS[backend]!r} group ({backend}), but "
            f"{obj.__name__} is a {backends[0]} algorithm; register it under "
            f"{GROUPS[backends[0]]!r}"
        )
    config = getattr(obj, "Config", None)
    if not (isinstance(config, type) and issubclass(config, BaseModel)):
        raise PluginLoadError(f"{where}: {obj.__name__}.Config must be a pydantic model class")


def _load(entry: AlgorithmEntry, backend: str) -> type[Algorithm]:
    where = f"entry point {entry.name} = {entry.value!r} of {entry.distribution}=={entry.version}"
    module_name, _, attr = entry.value.partition(":")
    try:
        obj: object = importlib.import_module(module_name)
        for part in attr.split(".") if attr else []:
            obj = getattr(obj, part)
    except Exception as exc:
        missing = (exc.name or "").split(".")[0] if isinstance(exc, ModuleNotFoundError) else ""
        if missing in BACKENDS:
            message = framework_missing(missing, f"{entry.name} ({where})")
        else:
            message = f"failed to load {where}: {type(exc).__name__}: {exc}"
        raise PluginLoadError(message) from exc
    validate_algorithm_class(obj, where, backend)
    return obj  # type: ignore[return-value]


registry = Registry()
