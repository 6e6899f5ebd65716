"""Metric sink writing TensorBoard event files (tensorboardX), one file per log directory.

Events are written synchronously with tensorboardX's ``EventsWriter`` rather than its
``SummaryWriter``, whose background queue makes ``flush`` return before the data is on disk.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path

from parl.plugins import hookimpl

import numpy as np
from tensorboardX.event_file_writer import EventsWriter
from tensorboardX.proto.event_pb2 import Event
from tensorboardX.summary import histogram, scalar

_lock = threading.Lock()
_writers: dict[Path, EventsWriter] = {}


def _writer(logdir: Path) -> EventsWriter:
    """The event file writer of ``logdir``, opened on first use (call with ``_lock`` held)."""
    key = Path(logdir)
    writer = _writers.get(key)
    if writer is None:
        key.mkdir(parents=True, exist_ok=True)
        writer = _writers[key] = EventsWriter(str(key / "events"))
    return writer


@hookimpl
def parl_log_metrics(metrics: Mapping[str, float], step: int, logdir: Path) -> None:
    """Append each metric as a scalar summary to the event file in ``logdir``."""
    now = time.time()
    with _lock:
        writer = _writer(logdir)
        for tag, value in metrics.items():
            writer.write_event(Event(wall_time=now, step=step, summary=scalar(tag, value)))


@hookimpl
def parl_log_histogram(tag: str, values: np.ndarray, step: int, logdir: Path) -> None:
    """Append a histogram summary (numpy's "auto" bins) to the event file."""
    summary = histogram(tag, values, bins="auto")
    with _lock:
        _writer(logdir).write_event(Event(wall_time=time.time(), step=step, summary=summary))


@hookimpl
def parl_flush_metrics(logdir: Path) -> None:
    """Write the buffered events of ``logdir`` to its event file."""
    with _lock:
        writer = _writers.get(Path(logdir))
        if writer is not None:
            writer.flush()


@hookimpl
def parl_close_metrics(logdir: Path) -> None:
    """Flush and close the event file of ``logdir``, if open."""
    with _lock:
        writer = _writers.pop(Path(logdir), None)
    if writer is not None:
        writer.close()
