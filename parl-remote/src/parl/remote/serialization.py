"""Serialization of call arguments and results into zmq frames.

Objects are pickled with cloudpickle at protocol 5. Buffers of at least ``OUT_OF_BAND_MIN_BYTES``
(numpy arrays, bytearrays) travel out of band as separate frames, so a large array is never copied
into one big pickle; on receipt the arrays are rebuilt on top of the received frames (writable,
no copy). Code objects travel with :mod:`marshal`, which keeps their file names: cloudpickle
3.1.3 names every code object it pickles "<dynamic-code>", and a remote traceback then lost
the source lines of an actor's methods.

An actor's class travels by reference where the actor's process can import its module (one of
the files the client shipped, or an installed package): the process imports the module, so its
top-level code runs there as in any import (``import ale_py``, ``gym.register(...)``, module
constants), and takes the class from it. A class of ``__main__`` or of a module the process
cannot import travels by value. The process imports only from the files its own client shipped
or from installed packages, never from another folder that happens to be on its ``sys.path``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import io
import marshal
import os
import pickle
import sys
import sysconfig
import threading
import types
from collections import ChainMap
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from parl.remote.exceptions import DeserializeError, SerializeError

import cloudpickle

__all__ = [
    "OUT_OF_BAND_MIN_BYTES",
    "ClassReference",
    "dumps",
    "load_class",
    "loads",
    "payload_size",
    "pickle_class",
]

OUT_OF_BAND_MIN_BYTES = 8192


def _reduce_code(code: types.CodeType) -> tuple[Any, tuple[bytes]]:
    return marshal.loads, (marshal.dumps(code),)


class _Pickler(cloudpickle.CloudPickler):
    """cloudpickle's pickler, but code objects keep their file name (see the module doc)."""

    dispatch_table: ClassVar[ChainMap[Any, Any]] = ChainMap(
        {types.CodeType: _reduce_code}, cloudpickle.CloudPickler.dispatch_table
    )


# Values the standard pickler writes exactly as cloudpickle would (nothing by value), checked
# in a few steps: most calls carry a handful of numbers, strings or arrays, and the standard
# pickler is several times cheaper per call than a CloudPickler.
_PLAIN_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes})
_PLAIN_ITEMS = 16  # containers longer than this go through cloudpickle unchecked


def _plain(obj: Any, depth: int = 3) -> bool:
    kind = type(obj)
    if kind in _PLAIN_SCALARS:
        return True
    if kind.__name__ == "ndarray" and kind.__module__ == "numpy":  # numpy need not be imported
        return not obj.dtype.hasobject
    if depth == 0:
        return False
    if kind is tuple or kind is list:
        return len(obj) <= _PLAIN_ITEMS and all(_plain(item, depth - 1) for item in obj)
    if kind is dict:
        return len(obj) <= _PLAIN_ITEMS and all(
            type(key) is str and _plain(value, depth - 1) for key, value in obj.items()
        )
    return False


def dumps(obj: Any, what: str = "object") -> list[Any]:
    """Pickle ``obj`` into ``[pickle_bytes, *out_of_band_buffers]``.

    Args:
        obj: Any cloudpickle-able object.
        what: Words naming the object in an error message (e.g. "the arguments of `add`").

    Raises:
        SerializeError: ``obj`` cannot be pickled; the message names it and the cause.
    """
    buffers: list[Any] = []

    def keep_out_of_band(buffer: pickle.PickleBuffer) -> bool:
        raw = buffer.raw()
        if raw.nbytes < OUT_OF_BAND_MIN_BYTES:
            return True
        buffers.append(raw)
        return False

    try:
        if _plain(obj):
            return [pickle.dumps(obj, 5, buffer_callback=keep_out_of_band), *buffers]
        stream = io.BytesIO()
        _Pickler(stream, protocol=5, buffer_callback=keep_out_of_band).dump(obj)
    except Exception as exc:
        raise SerializeError(
            f"cannot pickle {what}: {type(exc).__name__}: {exc}. Use picklable values "
            "(numbers, strings, lists, dicts, numpy arrays, plain classes); objects holding "
            "locks, sockets, files or generators cannot be sent to or from an actor."
        ) from exc
    return [stream.getvalue(), *buffers]


def payload_size(frames: Sequence[Any]) -> int:
    """Bytes of ``frames`` as :func:`dumps` returns them (most often one small pickle)."""
    if len(frames) == 1 and type(frames[0]) is bytes:
        return len(frames[0])
    return sum(memoryview(frame).nbytes for frame in frames)


def loads(frames: Sequence[Any], what: str = "object") -> Any:
    """Rebuild an object from ``[pickle_bytes, *out_of_band_buffers]`` (bytes or zmq frames).

    Raises:
        DeserializeError: the bytes cannot be unpickled here (e.g. a module missing on this side).
    """
    head, *rest = (getattr(frame, "buffer", frame) for frame in frames)
    try:
        return pickle.loads(head, buffers=rest)
    except Exception as exc:
        raise DeserializeError(
            f"cannot unpickle {what}: {type(exc).__name__}: {exc}. If a module is missing, "
            "ship it with parl.connect(..., distributed_files=[...]) or install it on every "
            "machine of the cluster."
        ) from exc


_by_value_lock = threading.Lock()


@dataclass(frozen=True)
class ClassReference:
    """An actor class that the actor's process imports itself: ``qualname`` in ``module``."""

    module: str
    qualname: str


def pickle_class(cls: type, shipped: Collection[str]) -> list[Any]:
    """Frames of an actor class for the actor's process (read back with :func:`load_class`).

    By reference where the process can import the class's module (see the module doc): it is
    one of the ``shipped`` files (paths relative to the actor's folder) or an installed
    package, and the class is reachable there by its qualified name. By value otherwise: a
    class of ``__main__``, of a module neither shipped nor installed, or defined in a function.
    """
    module = sys.modules.get(cls.__module__)
    # No module of its own (a class made by exec() in a bare namespace says "builtins"):
    # cloudpickle's own rules send it by value, and nothing of that module must go with it.
    if module is None or getattr(module, "__file__", None) is None:
        return dumps(cls, f"the class {cls.__qualname__}")
    if _importable_remotely(module, shipped):
        if _reachable(module, cls):
            return dumps(ClassReference(cls.__module__, cls.__qualname__), "a class reference")
        return dumps(cls, f"the class {cls.__qualname__}")  # a local class: by value
    # What the class refers to in a module the actor's process cannot import goes by value too.
    # The registration is cloudpickle's global state: one thread at a time.
    with _by_value_lock:
        cloudpickle.register_pickle_by_value(module)
        try:
            return dumps(cls, f"the class {cls.__qualname__}")
        finally:
            cloudpickle.unregister_pickle_by_value(module)


def load_class(frames: Sequence[Any], what: str, shipped_folder: Path | None) -> type:
    """The actor class from :func:`pickle_class`'s frames, importing its module if it came by
    reference.

    Args:
        frames: The class's frames.
        what: Words naming the class in an error message.
        shipped_folder: The folder holding the files this actor's client shipped (None: none).

    Raises:
        DeserializeError: The frames hold no class; or the module is neither among the shipped
            files nor installed here, or its import failed (the message says why).
    """
    loaded = loads(frames, what)
    if isinstance(loaded, ClassReference):
        return _import_class(loaded, shipped_folder)
    if not isinstance(loaded, type):
        raise DeserializeError(f"{what}: expected a class, got {type(loaded).__name__}")
    return loaded


def _reachable(module: types.ModuleType, cls: type) -> bool:
    """True when ``module``'s ``cls.__qualname__`` is ``cls`` or its remote proxy."""
    found: Any = module
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls or getattr(found, "_original", None) is cls


def _importable_remotely(module: types.ModuleType, shipped: Collection[str]) -> bool:
    """True when an actor's process can import ``module`` itself (shipped, or installed)."""
    file = getattr(module, "__file__", None)
    if module.__name__ == "__main__" or file is None:
        return False
    relative = module.__name__.replace(".", "/")
    if f"{relative}.py" in shipped or f"{relative}/__init__.py" in shipped:
        return True
    return _installed(file)


def _import_class(reference: ClassReference, shipped_folder: Path | None) -> type:
    """Import ``reference.module`` (from the shipped files or an installed package only) and
    take the class; a proxy found there (the module was imported before ``XPARL=True`` was
    set) gives its original class."""
    where = f"the module {reference.module!r} of the class {reference.qualname}"
    _check_origin(reference.module, where, shipped_folder)
    try:
        found: Any = importlib.import_module(reference.module)
    except BaseException as exc:
        raise DeserializeError(f"importing {where} failed: {type(exc).__name__}: {exc}") from exc
    for part in reference.qualname.split("."):
        found = getattr(found, part, None)
    found = getattr(found, "_original", found)
    if not isinstance(found, type):
        raise DeserializeError(
            f"{where} has no class {reference.qualname} here: the job's copy of the module "
            "differs from the client's; ship the same file or install the same version"
        )
    return found


def _check_origin(name: str, where: str, shipped_folder: Path | None) -> None:
    """Refuse to import ``name`` unless its top-level package lies in ``shipped_folder`` or
    among the installed packages (found without importing anything)."""
    top = name.partition(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError) as exc:
        spec, cause = None, f" ({exc})"
    else:
        cause = ""
    if spec is None:
        raise DeserializeError(
            f"cannot import {where} here{cause}: ship it with parl.connect(..., "
            "distributed_files=[...]) or install it on every machine of the cluster"
        )
    if spec.origin in ("built-in", "frozen"):
        return
    places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or [])
    roots = [*_installed_roots(), *([shipped_folder.resolve()] if shipped_folder else [])]
    outside = [p for p in places if not _inside(p, roots)]
    if outside or not places:
        raise DeserializeError(
            f"refusing to import {where} from {outside or places}: an actor imports modules "
            "only from the files its client shipped or from installed packages; ship the "
            "module with parl.connect(..., distributed_files=[...]) or install it"
        )


def _installed(file: str) -> bool:
    return _inside(file, _installed_roots())


def _inside(path: str, roots: Sequence[Path]) -> bool:
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(root) for root in roots)


@functools.cache
def _installed_roots() -> tuple[Path, ...]:
    """Where installed modules live: the standard library, site-packages, and the folders that
    site-packages' ``.pth`` files add (editable installs)."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    for site_dir in {paths["purelib"], paths["platlib"]}:
        for pth in sorted(Path(site_dir).glob("*.pth")):
            for line in pth.read_text(errors="replace").splitlines():
                line = line.strip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    roots.add(os.path.join(site_dir, line))
    return tuple(Path(root).resolve() for root in roots if os.path.isdir(root))
