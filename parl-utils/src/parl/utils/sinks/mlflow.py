"""Metric sink logging to MLflow: one MLflow run per log directory (``parl-utils[mlflow]``).

Opt-in: ``PARL_ENABLED_SINKS=mlflow``. The tracking URI is MLflow's own setting
(``MLFLOW_TRACKING_URI`` or ``mlflow.set_tracking_uri``); unset, runs go to a SQLite store in
the log directory, ``<logdir>/mlflow.db`` (MLflow 3 refuses its old ``./mlruns`` file store
unless told otherwise, and a database file needs no server). The experiment is
``MLFLOW_EXPERIMENT_NAME``, else ``parl``; the run is named after the log directory. Metrics
are logged with their step, and :func:`parl.utils.summary.add_params` gives the run params.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from parl.utils.sinks._opt_in import OptInSink, requires_extra

if TYPE_CHECKING:
    from mlflow import MlflowClient

DATABASE = "mlflow.db"
ARTIFACTS = "mlartifacts"
DEFAULT_EXPERIMENT = "parl"
LOGDIR_TAG = "parl.logdir"


@dataclass(frozen=True)
class MLflowRun:
    """An open MLflow run: the client of its tracking store and the run's id."""

    client: MlflowClient
    run_id: str


def param_text(value: object) -> str:
    """An MLflow param value: strings as they are, anything else as JSON (``[64, 64]``)."""
    return value if isinstance(value, str) else json.dumps(value)


class MLflowSink(OptInSink[MLflowRun]):
    """The ``mlflow`` sink: metrics and params of each log directory in an MLflow run."""

    name = "mlflow"

    def open_run(self, logdir: Path) -> MLflowRun:
        with requires_extra(self.name):
            from mlflow import MlflowClient
            from mlflow.environment_variables import (
                MLFLOW_EXPERIMENT_NAME,
                MLFLOW_TRACKING_URI,
            )
        uri, artifacts = MLFLOW_TRACKING_URI.get(), None
        if uri is None:
            uri = f"sqlite:///{(logdir / DATABASE).resolve()}"
            artifacts = (logdir / ARTIFACTS).resolve().as_uri()
        client = MlflowClient(tracking_uri=uri)
        name = MLFLOW_EXPERIMENT_NAME.get() or DEFAULT_EXPERIMENT
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            experiment_id = client.create_experiment(name, artifact_location=artifacts)
        else:
            experiment_id = experiment.experiment_id
        tags = {LOGDIR_TAG: str(logdir.resolve())}
        run = client.create_run(experiment_id, run_name=logdir.name, tags=tags)
        return MLflowRun(client, run.info.run_id)

    def log_metrics(self, run: MLflowRun, metrics: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(tag, value, now, step) for tag, value in metrics.items()]
        run.client.log_batch(run.run_id, metrics=batch)

    def log_params(self, run: MLflowRun, params: Mapping[str, object]) -> None:
        from mlflow.entities import Param

        batch = [Param(name, param_text(value)) for name, value in params.items()]
        run.client.log_batch(run.run_id, params=batch)

    def close_run(self, run: MLflowRun) -> None:
        run.client.set_terminated(run.run_id)


plugin = MLflowSink()
"""The instance registered under the entry point ``mlflow`` of the group ``parl``."""
