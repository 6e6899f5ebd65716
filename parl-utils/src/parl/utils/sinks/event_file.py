"""TensorBoard event files written with numpy and the standard library only.

An event file is a TFRecord file of ``Event`` protocol buffers: each record is the payload's
length (uint64, little-endian), the masked CRC-32C of those 8 bytes, the payload, and the
payload's masked CRC-32C. The metric sink needs three messages (a file-version event, a
scalar, a histogram), so they are encoded here in protobuf's wire format directly: tensorboardX,
which could do it, imports torch at import time wherever torch is installed (seconds and
hundreds of MB in the first training round of a paddle run).

Field numbers are those of TensorBoard's ``event.proto``, ``summary.proto`` and
``histogram.proto``.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from pathlib import Path

import numpy as np

__all__ = ["EventFile", "histogram_event", "scalar_event"]

_CASTAGNOLI = 0x82F63B78  # CRC-32C's polynomial, bit-reversed


def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_CASTAGNOLI if crc & 1 else 0)
        table.append(crc)
    return tuple(table)


_TABLE = _crc_table()


def masked_crc32c(data: bytes) -> int:
    """CRC-32C of ``data``, masked as TFRecord stores it (rotated right by 15, plus a constant)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _field(number, 2) + _varint(len(payload)) + payload


def _double_field(number: int, value: float) -> bytes:
    return _field(number, 1) + struct.pack("<d", value)


def _event(wall_time: float, step: int, body: bytes) -> bytes:
    """An ``Event`` (wall_time = 1, step = 2) followed by its ``file_version`` or ``summary``."""
    step_field = _field(2, 0) + _varint(step & 0xFFFFFFFFFFFFFFFF) if step else b""
    return _double_field(1, wall_time) + step_field + body


def _summary(tag: str, value: bytes) -> bytes:
    """``Event.summary`` (5) holding one ``Summary.Value`` (1) with ``tag`` (1) and ``value``."""
    return _bytes_field(5, _bytes_field(1, _bytes_field(1, tag.encode()) + value))


def scalar_event(tag: str, value: float, step: int, wall_time: float) -> bytes:
    """A serialized ``Event`` carrying one scalar (``Summary.Value.simple_value``, 2)."""
    return _event(wall_time, step, _summary(tag, _field(2, 5) + struct.pack("<f", value)))


def histogram_event(tag: str, values: np.ndarray, step: int, wall_time: float) -> bytes:
    """A serialized ``Event`` carrying a ``HistogramProto`` (``Summary.Value.histo``, 5) of
    ``values`` in numpy's "auto" bins.

    TensorBoard's bucket ``i`` holds the values up to ``bucket_limit[i]`` above the previous
    limit, so the limits are numpy's bin edges and the first bucket (below the lowest edge)
    is empty.
    """
    counts, edges = np.histogram(values, bins="auto")
    limits = np.asarray(edges, dtype="<f8")
    buckets = np.concatenate([[0.0], counts]).astype("<f8")
    stats = (values.min(), values.max(), values.size, values.sum(), values @ values)
    histo = b"".join(_double_field(number, float(x)) for number, x in enumerate(stats, 1))
    histo += _bytes_field(6, limits.tobytes()) + _bytes_field(7, buckets.tobytes())
    return _event(wall_time, step, _summary(tag, _bytes_field(5, histo)))


class EventFile:
    """One event file in a log directory; every write goes straight to the file (no queue),
    so :meth:`flush` returns with the data in the operating system's hands."""

    _count = 0
    _count_lock = threading.Lock()

    def __init__(self, logdir: Path) -> None:
        with EventFile._count_lock:
            EventFile._count += 1
            count = EventFile._count
        now = time.time()
        # TensorBoard reads every file whose name holds "tfevents"; pid and count keep two
        # writers of one second apart.
        name = f"events.out.tfevents.{int(now)}.{socket.gethostname()}.{os.getpid()}.{count}"
        self.path = Path(logdir) / name
        self._file = open(self.path, "wb")  # noqa: SIM115 (open until close())
        self.write(_event(now, 0, _bytes_field(3, b"brain.Event:2")))

    def write(self, event: bytes) -> None:
        """Append one serialized ``Event`` as a TFRecord."""
        header = struct.pack("<Q", len(event))
        crcs = struct.pack("<I", masked_crc32c(header)), struct.pack("<I", masked_crc32c(event))
        self._file.write(header + crcs[0] + event + crcs[1])

    def flush(self) -> None:
        """Hand what was written to the operating system."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        self._file.close()
