"""The algorithm registry: entry points of the group ``parl.algorithms``, loaded on demand."""

from __future__ import annotations

import difflib
import importlib
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from parl.core.errors import DuplicateAlgorithmError, PluginLoadError, UnknownAlgorithmError

if sys.version_info >= (3, 12):
    from importlib.metadata import EntryPoint, entry_points
else:
    from importlib_metadata import EntryPoint, entry_points

if TYPE_CHECKING:
    from parl.core.algorithm import Algorithm

ENTRY_POINT_GROUP = "parl.algorithms"

# First-party names and the distribution that provides them, for install hints.
FIRST_PARTY: dict[str, str] = {
    "DQN": "parl-algos-dqn",
    "DDQN": "parl-algos-dqn",
    "QMIX": "parl-algos-dqn",
    "PolicyGradient": "parl-algos-pg",
    "PPO": "parl-algos-pg",
    "A2C": "parl-algos-ac",
    "DDPG": "parl-algos-ac",
    "TD3": "parl-algos-ac",
    "SAC": "parl-algos-ac",
    "OAC": "parl-algos-ac",
    "CQL": "parl-algos-ac",
    "MADDPG": "parl-algos-ac",
    "IMPALA": "parl-algos-impala",
}


@dataclass(frozen=True)
class AlgorithmEntry:
    """One registered algorithm: its name, where it lives, and which distribution ships it."""

    name: str
    value: str
    distribution: str
    version: str

    @classmethod
    def from_entry_point(cls, entry_point: EntryPoint) -> AlgorithmEntry:
        dist = entry_point.dist
        return cls(
            name=entry_point.name,
            value=entry_point.value,
            distribution=dist.name if dist is not None else "<unknown distribution>",
            version=dist.version if dist is not None else "?",
        )


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
        lines = [f"no algorithm named {name!r} is installed."]
        close = difflib.get_close_matches(name, set(installed) | set(FIRST_PARTY), n=3, cutoff=0.6)
        lowered = {n.lower(): n for n in set(installed) | set(FIRST_PARTY)}
        if name.lower() in lowered and lowered[name.lower()] not in close:
            close.insert(0, lowered[name.lower()])
        if close:
            lines.append(f"Did you mean {' or '.join(repr(c) for c in close)}?")
        lines.append(f"Installed algorithms: {', '.join(installed) if installed else '(none)'}.")
        family = FIRST_PARTY.get(name)
        if family is not None:
            lines.append(f"{name} is provided by the {family} distribution: pip install {family}")
        return " ".join(lines)


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
        raise PluginLoadError(f"failed to load {where}: {type(exc).__name__}: {exc}") from exc
    validate_algorithm_class(obj, where)
    return obj  # type: ignore[return-value]


registry = Registry()
