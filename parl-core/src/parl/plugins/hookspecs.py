"""The hook specifications of PARL.

Plugins implement these with :data:`parl.hookimpl` and register through the entry-point group
``parl``. Hooks are always called with keyword arguments (pluggy reads the argument names
from these signatures, so they are written as plain parameters); an implementation may accept
a subset of the arguments, and new arguments are only ever added, never renamed or removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from parl.core.paddle.agent import Agent

    import numpy as np

hookspec = pluggy.HookspecMarker("parl")


@hookspec
def parl_log_metrics(metrics: Mapping[str, float], step: int, logdir: Path) -> None:
    """Record scalar metrics of a run (an observer: every implementation is called).

    Metric sinks (TensorBoard, CSV, …) implement this hook; ``parl.utils.summary`` calls it.
    Keys follow the fixed namespaced scheme, e.g. ``charts/episodic_return`` or ``losses/value``.

    Args:
        metrics: metric name to scalar value.
        step: the global step the values belong to (usually environment steps).
        logdir: the run's log directory; a sink writes its files below it.

    .. versionadded:: 0.1
    """


@hookspec
def parl_log_params(params: Mapping[str, object], logdir: Path) -> None:
    """Record the settings of a run, e.g. its hyperparameters (an observer).

    ``parl.utils.summary.add_params`` calls it, usually once before training; experiment
    trackers (MLflow, Weights & Biases) show them beside the run's metrics, and sinks without
    a place for settings (TensorBoard, CSV) do not implement it.

    Args:
        params: setting name to a JSON value (string, number, bool, None, or lists and
            string-keyed dicts of those).
        logdir: the run's log directory, as passed to :func:`parl_log_metrics`.

    .. versionadded:: 0.1
    """


@hookspec
def parl_log_histogram(tag: str, values: np.ndarray, step: int, logdir: Path) -> None:
    """Record the distribution of a set of values, e.g. weights or actions (an observer).

    ``parl.utils.summary.add_histogram`` calls it; sinks that cannot show histograms (CSV) do
    not implement it.

    Args:
        tag: the histogram's name, e.g. ``"weights/fc1"``.
        values: the values, a flat float64 array without NaN.
        step: the global step the values belong to.
        logdir: the run's log directory; a sink writes its files below it.

    .. versionadded:: 0.1
    """


@hookspec
def parl_flush_metrics(logdir: Path) -> None:
    """Put every metric logged so far for ``logdir`` on disk, keeping files open (an observer).

    Called by ``parl.utils.summary.flush()``, e.g. at checkpoints.

    Args:
        logdir: the run's log directory, as passed to :func:`parl_log_metrics`.

    .. versionadded:: 0.1
    """


@hookspec
def parl_close_metrics(logdir: Path) -> None:
    """Flush and close whatever a sink holds open for ``logdir`` (an observer).

    Called by ``parl.utils.summary.close()`` and at interpreter exit.

    Args:
        logdir: the run's log directory, as passed to :func:`parl_log_metrics`.

    .. versionadded:: 0.1
    """


@hookspec
def parl_after_save(agent: Agent, path: Path, kind: str) -> None:
    """Observe a file that :class:`parl.Agent` has just saved (an observer).

    Called after the file is complete and atomically in place, so an implementation may copy,
    upload or index it. An exception raised here is logged as a warning: the save has
    succeeded and does not fail because of an observer.

    Args:
        agent: the agent that saved.
        path: the file written.
        kind: ``"weights"`` (:meth:`parl.Agent.save`, one model) or ``"checkpoint"``
            (:meth:`parl.Agent.save_checkpoint`, the whole training state).

    .. versionadded:: 0.1
    """
