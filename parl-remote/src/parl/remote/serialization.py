"""Serialization of call arguments and results into zmq frames.

Objects are pickled with cloudpickle at protocol 5. Buffers of at least ``OUT_OF_BAND_MIN_BYTES``
(numpy arrays, bytearrays) travel out of band as separate frames, so a large array is never copied
into one big pickle; on receipt the arrays are rebuilt on top of the received frames (writable,
no copy).
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Sequence
from typing import Any

from parl.remote.exceptions import DeserializeError, SerializeError

import cloudpickle

__all__ = ["OUT_OF_BAND_MIN_BYTES", "dumps", "loads"]

OUT_OF_BAND_MIN_BYTES = 8192


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
        cloudpickle.CloudPickler(stream, protocol=5, buffer_callback=keep_out_of_band).dump(obj)
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
