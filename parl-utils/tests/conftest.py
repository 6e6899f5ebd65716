"""Shared fixtures: every test gets fresh plugin and summary state and runs in a temp dir."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from parl.plugins import reset_plugin_manager
from parl.utils import summary

import pytest
from tensorboardX.proto import event_pb2
from tensorboardX.record_writer import masked_crc32c


def read_events(logdir: Path) -> list[event_pb2.Event]:
    """Every event of the TensorBoard event files in ``logdir``, parsed and checked with
    tensorboardX (an implementation other than the sink's): each record's two CRCs, and each
    payload read as an ``Event`` with no bytes left over."""
    events = []
    for path in sorted(logdir.glob("events.out.tfevents.*")):
        data, offset = path.read_bytes(), 0
        while offset < len(data):
            # record: uint64 length, uint32 crc(length), payload, uint32 crc(payload)
            header, (length_crc,) = (
                data[offset : offset + 8],
                struct.unpack_from("<I", data, offset + 8),
            )
            assert length_crc == masked_crc32c(header), f"bad length CRC at {offset} in {path}"
            (length,) = struct.unpack("<Q", header)
            payload = data[offset + 12 : offset + 12 + length]
            (payload_crc,) = struct.unpack_from("<I", data, offset + 12 + length)
            assert payload_crc == masked_crc32c(payload), f"bad payload CRC at {offset} in {path}"
            event = event_pb2.Event.FromString(payload)
            assert event.SerializeToString() == payload  # every byte was understood
            events.append(event)
            offset += 12 + length + 4
    return events


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PARL_DISABLED_PLUGINS", raising=False)
    monkeypatch.delenv("PARL_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    reset_plugin_manager()
    monkeypatch.setattr(summary, "_logdir", None)
    yield
    summary.close()
    reset_plugin_manager()
