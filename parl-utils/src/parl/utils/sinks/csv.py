"""Metric sink appending to ``<logdir>/metrics.csv`` in long format ``step,tag,value``.

One row per metric and step, so new metric names may appear at any time; the file is flushed
after every call and appended to when reopened.
"""

from __future__ import annotations

import csv
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from parl.plugins import hookimpl

FILE_NAME = "metrics.csv"
HEADER = ("step", "tag", "value")

_lock = threading.Lock()
_files: dict[Path, tuple[TextIO, Any]] = {}


def _open(logdir: Path) -> tuple[TextIO, Any]:
    logdir.mkdir(parents=True, exist_ok=True)
    handle = (logdir / FILE_NAME).open("a", newline="", encoding="utf-8")
    writer = csv.writer(handle)
    if handle.tell() == 0:
        writer.writerow(HEADER)
    return handle, writer


@hookimpl
def parl_log_metrics(metrics: Mapping[str, float], step: int, logdir: Path) -> None:
    """Append one ``step,tag,value`` row per metric and flush."""
    key = Path(logdir)
    with _lock:
        if key not in _files:
            _files[key] = _open(key)
        handle, writer = _files[key]
        writer.writerows((step, tag, repr(float(value))) for tag, value in metrics.items())
        handle.flush()


@hookimpl
def parl_flush_metrics(logdir: Path) -> None:
    """Nothing to do: every row is flushed as it is written."""


@hookimpl
def parl_close_metrics(logdir: Path) -> None:
    """Close ``<logdir>/metrics.csv`` if it is open."""
    with _lock:
        entry = _files.pop(Path(logdir), None)
    if entry is not None:
        entry[0].close()
