"""The algorithm registry: entry points of the group ``parl.algorithms``, loaded on demand."""

from __future__ import annotations

import difflib
import importlib
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from parl.core.errors import (
    DuplicateAlgorithmError,
    PluginLoadError,
    UnknownAlgorithmError,
    paddle_missing,
)
from parl.plugins._entry_points import EntryPoint, entry_points, origin

if TYPE_CHECKING:
    from parl.core.algorithm import Algorithm

ENTRY_POINT_GROUP = "parl.algorithms"

# The first-party families this repository builds, and the algorithms each ships (or will
# ship: parl-algos-ac and parl-algos-impala are being built), for install hints.
FAMILIES: dict[str, tuple[str, ...]] = {
    "parl-algos-dqn": ("DQN", "DDQN"),
    "parl-algos-pg": ("PolicyGradient", "PPO"),
    "parl-algos-ac": ("A2C", "DDPG", "TD3", "SAC", "OAC", "CQL", "IQL"),
    "parl-algos-impala": ("IMPALA",),
    "parl-algos-es": ("ES", "CMAES", "GA"),
    "parl-algos-marl": ("MADDPG", "QMIX", "MAPPO"),
}
# PARL 2.x algorithms that no family ships (yet), with the family they would belong to.
PARL2_ONLY: dict[str, str] = {
    "A3C": "parl-algos-ac",  # PARL 2.x fluid
    "COMA": "parl-algos-marl",  # PARL 2.x torch
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
    """Name → algorithm class, read from package metadata once and cached until :meth:`refresh`."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._entries: dict[str, list[AlgorithmEntry]] | None = None
        self._extra: dict[str, type[Algorithm]] = {}
        self._loaded: dict[str, type[Algorithm]] = {}

    def refresh(self) -> None:
        """Forget the cached scan and loaded classes; the next lookup re-reads the metadata."""
        with self._lock:
            self._entries = None
            self._loaded.clear()

    def _scan(self) -> dict[str, list[AlgorithmEntry]]:
        with self._lock:
            if self._entries is None:
                entries: dict[str, list[AlgorithmEntry]] = {}
                seen: set[tuple[str, str, str]] = set()
                for entry_point in entry_points(group=ENTRY_POINT_GROUP):
                    entry = AlgorithmEntry.from_entry_point(entry_point)
                    key = (entry.name, entry.value, entry.distribution)
                    if key not in seen:  # the same dist found twice on sys.path
                        seen.add(key)
                        entries.setdefault(entry.name, []).append(entry)
                self._entries = entries
            return self._entries

    def entries(self) -> dict[str, list[AlgorithmEntry]]:
        """Return every registered name with the entries that provide it (metadata only)."""
        return {name: list(found) for name, found in self._scan().items()}

    def names(self) -> list[str]:
        """Return the sorted names of the available algorithms, importing no plugin."""
        with self._lock:
            return sorted(set(self._scan()) | set(self._extra))

    def get(self, name: str) -> type[Algorithm]:
        """Import, validate and return the algorithm class registered as ``name``.

        Raises:
            UnknownAlgorithmError: no plugin registers ``name``.
            DuplicateAlgorithmError: two distributions register ``name``.
            PluginLoadError: the plugin fails to import or is not a valid algorithm.
        """
        with self._lock:
            if name in self._extra:
                return self._extra[name]
            if name in self._loaded:
                return self._loaded[name]
            found = self._scan().get(name)
            if not found:
                raise UnknownAlgorithmError(self._unknown_message(name))
            if len(found) > 1:
                owners = ", ".join(f"{e.distribution}=={e.version} ({e.value})" for e in found)
                raise DuplicateAlgorithmError(
                    f"algorithm {name!r} is registered by more than one distribution: {owners}; "
                    "uninstall one of them"
                )
            cls = _load(found[0])
            self._loaded[name] = cls
            return cls

    def register(self, name: str, cls: type[Algorithm]) -> None:
        """Register ``cls`` as ``name`` in this process only (see :mod:`parl.testing`)."""
        validate_algorithm_class(cls, f"{cls.__module__}:{cls.__qualname__}")
        with self._lock:
            if name in self._extra or name in self._scan():
                raise DuplicateAlgorithmError(f"algorithm {name!r} is already registered")
            self._extra[name] = cls

    def unregister(self, name: str) -> None:
        """Remove a name added with :meth:`register`."""
        with self._lock:
            if name not in self._extra:
                raise UnknownAlgorithmError(f"{name!r} was not registered with register()")
            del self._extra[name]

    def _unknown_message(self, name: str) -> str:
        installed = self.names()
        # Typos are matched against installed names; a wrong case also against first-party ones.
        close = difflib.get_close_matches(name, set(installed) - {name}, n=3, cutoff=0.6)
        same_but_case = {n.lower(): n for n in (set(installed) | set(FIRST_PARTY)) - {name}}
        meant = same_but_case.get(name.lower(), name)
        if meant != name and meant not in close:
            close.insert(0, meant)
        lines = [f"no algorithm named {name!r} is installed."]
        if close:
            lines.append(f"Did you mean {' or '.join(repr(c) for c in close)}?")
        lines.append(f"Installed algorithms: {', '.join(installed) if installed else '(none)'}.")
        family = FIRST_PARTY.get(meant)
        if family is not None and meant not in installed:
            lines.append(self._family_hint(meant, family))
        return " ".join(lines)

    def _family_hint(self, name: str, family: str) -> str:
        version = _installed_version(family)
        if version is not None:
            provided = sorted(e.name for e in self._installed_entries() if e.distribution == family)
            return (
                f"{name} belongs to the {family} family, which is installed ({family} {version}) "
                f"but does not provide it; it provides {', '.join(provided) or 'nothing'}."
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

    def _installed_entries(self) -> list[AlgorithmEntry]:
        return [entry for found in self._scan().values() for entry in found]


def validate_algorithm_class(obj: object, where: str) -> None:
    """Raise :class:`PluginLoadError` unless ``obj`` is an Algorithm with a pydantic ``Config``.

    Args:
        obj: the object an entry point resolved to.
        where: where it came from, for the message.
    """
    from parl.core.algorithm import Algorithm

    from pydantic import BaseModel

    if not (isinstance(obj, type) and issubclass(obj, Algorithm)):
        raise PluginLoadError(f"{where} is {obj!r}, not a subclass of parl.Algorithm")
    config = getattr(obj, "Config", None)
    if not (isinstance(config, type) and issubclass(config, BaseModel)):
        raise PluginLoadError(f"{where}: {obj.__name__}.Config must be a pydantic model class")


def _load(entry: AlgorithmEntry) -> type[Algorithm]:
    where = f"entry point {entry.name} = {entry.value!r} of {entry.distribution}=={entry.version}"
    module_name, _, attr = entry.value.partition(":")
    try:
        obj: object = importlib.import_module(module_name)
        for part in attr.split(".") if attr else []:
            obj = getattr(obj, part)
    except Exception as exc:
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "paddle":
            message = paddle_missing(f"{entry.name} ({where})")
        else:
            message = f"failed to load {where}: {type(exc).__name__}: {exc}"
        raise PluginLoadError(message) from exc
    validate_algorithm_class(obj, where)
    return obj  # type: ignore[return-value]


registry = Registry()
