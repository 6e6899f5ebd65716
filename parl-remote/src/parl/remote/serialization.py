"""Serialization of call arguments and results into zmq frames.

Objects are pickled with cloudpickle at protocol 5. Buffers of at least ``OUT_OF_BAND_MIN_BYTES``
(numpy arrays, bytearrays) travel out of band as separate frames, so a large array is never copied
into one big pickle; on receipt the arrays are rebuilt on top of the received frames (writable,
no copy). Code objects travel with :mod:`marshal`, which keeps their file names: cloudpickle
3.1.3 names every code object it pickles "<dynamic-code>", and a remote traceback then lost
the source lines of an actor's methods.
"""

from __future__ import annotations

import io
import marshal
import pickle
import types
from collections import ChainMap
from collections.abc import Sequence
from typing import Any, ClassVar

from parl.remote.exceptions import DeserializeError, SerializeError

import cloudpickle

__all__ = ["OUT_OF_BAND_MIN_BYTES", "dumps", "loads"]

OUT_OF_BAND_MIN_BYTES = 8192


def _reduce_code(code: types.CodeType) -> tuple[Any, tuple[bytes]]:
    return marshal.loads, (marshal.dumps(code),)


class _Pickler(cloudpickle.CloudPickler):
    """cloudpickle's pickler, but code objects keep their file name (see the module doc)."""

    dispatch_table: ClassVar[ChainMap[Any, Any]] = ChainMap(
        {types.CodeType: _reduce_code}, cloudpickle.CloudPickler.dispatch_table
    )


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

    stream = io.BytesIO()
    try:
        _Pickler(stream, protocol=5, buffer_callback=keep_out_of_band).dump(obj)
    except Exception as exc:
        raise SerializeError(
            f"cannot pickle {what}: {type(exc).__name__}: {exc}. Use picklable values "
            "(numbers, strings, lists, dicts, numpy arrays, plain classes); objects holding "
            "locks, sockets, files or generators cannot be sent to or from an actor."
        ) from exc
    return [stream.getvalue(), *buffers]


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
