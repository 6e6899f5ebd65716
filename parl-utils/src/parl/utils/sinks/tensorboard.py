"""Metric sink writing TensorBoard event files (tensorboardX), one writer per log directory."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from tensorboardX import SummaryWriter

from parl.plugins import hookimpl

_lock = threading.Lock()
_writers: dict[Path, SummaryWriter] = {}


@hookimpl
def parl_log_metrics(metrics: Mapping[str, float], step: int, logdir: Path) -> None:
    """Write each metric as a scalar summary to the event file in ``logdir``."""
    key = Path(logdir)
    with _lock:
        writer = _writers.get(key)
        if writer is None:
            writer = _writers[key] = SummaryWriter(logdir=str(key))
        for tag, value in metrics.items():
            writer.add_scalar(tag, value, global_step=step)


@hookimpl
def parl_flush_metrics(logdir: Path) -> None:
    """Write the pending events of ``logdir``'s writer to its event file."""
    with _lock:
        writer = _writers.get(Path(logdir))
        if writer is not None:
            writer.flush()


@hookimpl
def parl_close_metrics(logdir: Path) -> None:
    """Flush and close the writer of ``logdir``, if any."""
    with _lock:
        writer = _writers.pop(Path(logdir), None)
    if writer is not None:
        writer.close()
