"""What the opt-in sinks (MLflow, W&B) share: the switch, the extra, one run per log directory.

An experiment tracker is not switched on by being installed (a W&B run may upload, and an
environment may hold MLflow or wandb for other reasons): it logs only when named in
``PARL_ENABLED_SINKS``. Asked for without its library, it raises an ``ImportError`` naming the
extra of parl-utils to install; not asked for, it never imports the library.
"""

from __future__ import annotations

import atexit
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from parl.plugins import hookimpl

ENABLE_VARIABLE = "PARL_ENABLED_SINKS"
OPT_IN_SINKS = ("mlflow", "wandb")
"""The names ``PARL_ENABLED_SINKS`` accepts; each is also the extra of parl-utils it needs."""

RunT = TypeVar("RunT")


def enabled_sinks() -> set[str]:
    """The opt-in sinks named in ``PARL_ENABLED_SINKS`` (comma-separated).

    Raises:
        ValueError: a name is not an opt-in sink.
    """
    raw = os.environ.get(ENABLE_VARIABLE, "")
    names = {name.strip() for name in raw.split(",") if name.strip()}
    unknown = sorted(names - set(OPT_IN_SINKS))
    if unknown:
        raise ValueError(
            f"{ENABLE_VARIABLE}={raw!r} names {', '.join(unknown)}, which is no opt-in sink; "
            f"the opt-in sinks are {', '.join(OPT_IN_SINKS)} (tensorboard and csv are always "
            "on: switch those off with PARL_DISABLED_PLUGINS)"
        )
    return names


@contextmanager
def requires_extra(sink: str) -> Iterator[None]:
    """Turn an ``ImportError`` of the imports inside into one naming ``parl-utils[sink]``."""
    try:
        yield
    except ImportError as exc:
        raise ImportError(
            f"the {sink} metric sink is enabled ({ENABLE_VARIABLE}) but its library is not "
            f"installed ({exc}); install it with: pip install 'parl-utils[{sink}]', or remove "
            f"{sink} from {ENABLE_VARIABLE}"
        ) from exc


class OptInSink(ABC, Generic[RunT]):
    """A hook plugin that opens one tracker run per log directory, once it is enabled.

    Subclasses say how to open, feed and close a run of their tracker; this class decides
    when, and keeps the runs. Hooks may come from several threads, hence the lock.
    """

    name: ClassVar[str]
    """The entry-point name, the word in ``PARL_ENABLED_SINKS`` and the parl-utils extra."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[Path, RunT] = {}
        self._finishing_at_exit = False

    @abstractmethod
    def open_run(self, logdir: Path) -> RunT:
        """Start a tracker run for ``logdir`` (import the library inside ``requires_extra``)."""

    @abstractmethod
    def log_metrics(self, run: RunT, metrics: Mapping[str, float], step: int) -> None:
        """Record scalar metrics at ``step``."""

    @abstractmethod
    def log_params(self, run: RunT, params: Mapping[str, object]) -> None:
        """Record the run's settings."""

    @abstractmethod
    def close_run(self, run: RunT) -> None:
        """Finish the run, so that the tracker shows it complete."""

    def _run(self, logdir: Path) -> RunT | None:
        """The run of ``logdir``, opened on first use if enabled (call with the lock held)."""
        key = Path(logdir)
        run = self._runs.get(key)
        if run is None and self.name in enabled_sinks():
            key.mkdir(parents=True, exist_ok=True)
            run = self._runs[key] = self.open_run(key)
            if not self._finishing_at_exit:
                # Registered after the tracker's own exit handlers, so it runs before them
                # (atexit is last in, first out): a run left open is finished while the
                # tracker still works (W&B's handler stops the service that finishing needs).
                atexit.register(self.close_all)
                self._finishing_at_exit = True
        return run

    def close_all(self) -> None:
        """Finish every open run."""
        with self._lock:
            runs, self._runs = list(self._runs.values()), {}
        for run in runs:
            self.close_run(run)

    @hookimpl
    def parl_log_metrics(self, metrics: Mapping[str, float], step: int, logdir: Path) -> None:
        """Send the metrics to the run of ``logdir``."""
        with self._lock:
            run = self._run(logdir)
            if run is not None:
                self.log_metrics(run, metrics, step)

    @hookimpl
    def parl_log_params(self, params: Mapping[str, object], logdir: Path) -> None:
        """Send the settings to the run of ``logdir``."""
        with self._lock:
            run = self._run(logdir)
            if run is not None:
                self.log_params(run, params)

    @hookimpl
    def parl_close_metrics(self, logdir: Path) -> None:
        """Finish the run of ``logdir``, if one was opened."""
        with self._lock:
            run = self._runs.pop(Path(logdir), None)
        if run is not None:
            self.close_run(run)
