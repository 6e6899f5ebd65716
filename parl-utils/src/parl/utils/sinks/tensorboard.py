"""Metric sink writing TensorBoard event files, one file per log directory.

Events are written synchronously (:class:`~parl.utils.sinks.event_file.EventFile`), so ``flush``
returns with the data on its way to disk, and with numpy alone: the first metric of a run
imports no framework.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path

from parl.plugins import hookimpl
from parl.utils.sinks.event_file import EventFile, histogram_event, scalar_event

import numpy as np

_lock = threading.Lock()
_writers: dict[Path, EventFile] = {}


def _writer(logdir: Path) -> EventFile:
    """The event file writer of ``logdir``, opened on first use (call with ``_lock`` held)."""
    key = Path(logdir)
    writer = _writers.get(key)
    if writer is None:
        key.mkdir(parents=True, exist_ok=True)
        writer = _writers[key] = EventFile(key)
    return writer


@hookimpl
def parl_log_metrics(metrics: Mapping[str, float], step: int, logdir: Path) -> None:
    """Append each metric as a scalar summary to the event file in ``logdir``."""
    now = time.time()
    with _lock:
        writer = _writer(logdir)
        for tag, value in metrics.items():
            writer.write(scalar_event(tag, value, step, now))


@hookimpl
def parl_log_histogram(tag: str, values: np.ndarray, step: int, logdir: Path) -> None:
    """Append a histogram summary (numpy's "auto" bins) to the event file."""
    event = histogram_event(tag, values, step, time.time())
    with _lock:
        _writer(logdir).write(event)


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
