"""Scalar metrics for a run, written by the metric-sink plugins (TensorBoard, CSV, …).

Every call goes through the ``parl_log_metrics`` hook, so any installed sink receives the
values; ``PARL_DISABLED_PLUGINS=csv`` (for instance) switches a sink off. The log directory
defaults to :func:`parl.utils.logger.get_dir` (``auto_set_dir()`` if none is set);
:func:`close` runs at interpreter exit.

Examples:
    >>> from parl.utils import summary
    >>> summary.add_scalar("charts/episodic_return", 200.0, step=1000)
    >>> summary.add_scalars({"losses/value": 0.3, "losses/policy": -0.1}, step=1000)
    >>> summary.add_histogram("actions", [0.1, -0.4, 0.9], step=1000)
    >>> summary.add_params({"lr": 3e-4, "hidden_sizes": [64, 64]})
"""

from __future__ import annotations

import atexit
import json
import math
import operator
import os
import threading
from collections.abc import Mapping
from pathlib import Path

from parl.plugins import get_plugin_manager
from parl.utils import logger

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "add_histogram",
    "add_params",
    "add_scalar",
    "add_scalars",
    "close",
    "flush",
    "get_logdir",
    "set_logdir",
]

_lock = threading.RLock()
_logdir: Path | None = None
# The logdir that sinks may hold files open for; None once closed.
_open_logdir: Path | None = None


def set_logdir(path: str | os.PathLike[str]) -> None:
    """Send later metrics to ``path`` (created if needed), closing the sinks of the previous one.

    Args:
        path: the directory that sinks write their files into.
    """
    global _logdir
    new = Path(path)
    with _lock:
        if _open_logdir is not None and _open_logdir != new:
            close()
        new.mkdir(parents=True, exist_ok=True)
        _logdir = new


def get_logdir() -> Path:
    """Return the directory metrics go to, choosing the logger's directory on first use."""
    global _logdir
    with _lock:
        if _logdir is None:
            _logdir = Path(logger.get_dir() or logger.auto_set_dir())
        return _logdir


def _check_step(step: int) -> int:
    try:
        return operator.index(step)
    except TypeError:
        raise TypeError(
            f"step must be an integer, got {step!r} of type {type(step).__name__}; "
            "pass the global step counter, e.g. int(step)"
        ) from None


def _check_value(tag: str, value: float) -> float:
    array = np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "biuf":
        raise TypeError(
            f"metric {tag!r} must be a real number, got {value!r} of type "
            f"{type(value).__name__}; log a float or a one-element array"
        )
    number = float(array.reshape(()))
    if math.isnan(number):
        logger.warning("metric %r is NaN", tag)
    return number


def _to_sinks(hook: str, **arguments: object) -> None:
    """Call the sinks' ``hook`` for the current log directory, which they may now hold open."""
    global _open_logdir
    with _lock:
        logdir = get_logdir()
        _open_logdir = logdir
        getattr(get_plugin_manager().hook, hook)(**arguments, logdir=logdir)


def add_scalars(scalars: Mapping[str, float], step: int) -> None:
    """Record several scalar metrics at the same step.

    Args:
        scalars: metric name (e.g. ``"losses/value"``) to value.
        step: the global step (usually environment steps).

    Raises:
        TypeError: if ``step`` is not an integer or a value is not a real number.
    """
    metrics = {str(tag): _check_value(str(tag), value) for tag, value in scalars.items()}
    checked_step = _check_step(step)
    if metrics:
        _to_sinks("parl_log_metrics", metrics=metrics, step=checked_step)


def add_scalar(tag: str, value: float, step: int) -> None:
    """Record one scalar metric (PARL's signature).

    Args:
        tag: the metric name, e.g. ``"charts/episodic_return"``.
        value: the value; numpy scalars and one-element arrays are accepted.
        step: the global step.
    """
    add_scalars({tag: value}, step)


def add_histogram(tag: str, values: ArrayLike, step: int) -> None:
    """Record the distribution of ``values`` (PARL's signature), through ``parl_log_histogram``.

    The TensorBoard sink shows it on its histograms tab; the CSV sink ignores histograms.

    Args:
        tag: the histogram's name, e.g. ``"weights/fc1"``.
        values: any array of real numbers (flattened), e.g. a weight matrix.
        step: the global step.

    Raises:
        TypeError: if ``step`` is not an integer or ``values`` are not real numbers.
        ValueError: if ``values`` is empty or holds NaN.
    """
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"histogram {tag!r} needs real numbers, got {array.dtype} values; pass a numeric "
            "array (call .numpy() on a tensor)"
        )
    flat = array.astype(np.float64).reshape(-1)
    if flat.size == 0 or np.isnan(flat).any():
        raise ValueError(f"histogram {tag!r} needs at least one value and no NaN, got {array!r}")
    _to_sinks("parl_log_histogram", tag=str(tag), values=flat, step=_check_step(step))


def _check_params(params: Mapping[str, object]) -> dict[str, object]:
    for name, value in params.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"param names must be non-empty strings, got {name!r}")
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            raise TypeError(
                f"param {name!r} must be a JSON value (str, number, bool, None, or lists and "
                f"str-keyed dicts of those) without NaN, got {value!r}; convert it first, "
                "e.g. str(path)"
            ) from None
    return dict(params)


def add_params(params: Mapping[str, object]) -> None:
    """Record the settings of the run (hyperparameters, seed, environment id) once, up front.

    Goes through the ``parl_log_params`` hook: the MLflow sink logs them as run params, the
    W&B sink as the run's config; TensorBoard and CSV keep no settings.

    Args:
        params: setting name to a JSON value, e.g. ``dataclasses.asdict(args)``.

    Raises:
        TypeError: if a name is not a string or a value is not JSON (e.g. a ``Path``).
    """
    checked = _check_params(params)
    if checked:
        _to_sinks("parl_log_params", params=checked)


def flush() -> None:
    """Put everything logged so far on disk (the ``parl_flush_metrics`` hook); files stay open."""
    with _lock:
        if _open_logdir is not None:
            get_plugin_manager().hook.parl_flush_metrics(logdir=_open_logdir)


def close() -> None:
    """Flush and close the sinks' files for the current log directory (also runs at exit)."""
    global _open_logdir
    with _lock:
        if _open_logdir is None:
            return
        logdir, _open_logdir = _open_logdir, None
        get_plugin_manager().hook.parl_close_metrics(logdir=logdir)


atexit.register(close)
