"""The MLflow sink against the real MLflow client, writing SQLite stores in temporary folders."""

from __future__ import annotations

from pathlib import Path

from parl.utils import summary

import pytest
from mlflow import MlflowClient
from mlflow.entities import Run


@pytest.fixture(autouse=True)
def _mlflow_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARL_ENABLED_SINKS", "mlflow")
    for variable in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.delenv(variable, raising=False)


def only_run(tracking_uri: str, experiment: str) -> tuple[MlflowClient, Run]:
    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r} in {tracking_uri}"
    (run,) = client.search_runs([found.experiment_id])
    return client, run


def history(client: MlflowClient, run: Run, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]


def test_metrics_and_params_reach_a_sqlite_store_in_the_logdir(tmp_path: Path) -> None:
    logdir = tmp_path / "ppo-seed0"
    summary.set_logdir(logdir)
    summary.add_params({"lr": 3e-4, "env_id": "CartPole-v1", "hidden_sizes": [64, 64]})
    summary.add_scalar("charts/episodic_return", 21.5, step=100)
    summary.add_scalars({"losses/value": 0.25, "charts/episodic_return": 30.0}, step=200)
    summary.close()

    client, run = only_run(f"sqlite:///{logdir / 'mlflow.db'}", "parl")
    assert run.info.run_name == "ppo-seed0"
    assert run.info.status == "FINISHED"
    assert run.data.tags["parl.logdir"] == str(logdir.resolve())
    assert run.data.params == {
        "lr": "0.0003",
        "env_id": "CartPole-v1",
        "hidden_sizes": "[64, 64]",
    }
    assert set(run.data.metrics) == {"charts/episodic_return", "losses/value"}
    assert history(client, run, "charts/episodic_return") == [(100, 21.5), (200, 30.0)]
    assert history(client, run, "losses/value") == [(200, 0.25)]
    # csv and tensorboard still write beside it.
    assert (logdir / "metrics.csv").exists()


def test_tracking_uri_and_experiment_set_by_the_user_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "shared" / "tracking.db"
    store.parent.mkdir()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store}")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "cartpole")
    summary.set_logdir(tmp_path / "run")
    summary.add_scalar("eval/episodic_return", 500.0, step=7)
    summary.close()

    assert not (tmp_path / "run" / "mlflow.db").exists()
    client, run = only_run(f"sqlite:///{store}", "cartpole")
    assert history(client, run, "eval/episodic_return") == [(7, 500.0)]


def test_each_logdir_gets_its_own_run(tmp_path: Path) -> None:
    for seed in (0, 1):
        summary.set_logdir(tmp_path / f"seed{seed}")
        summary.add_scalar("charts/SPS", 1000.0 + seed, step=seed)
    summary.close()
    for seed in (0, 1):
        client, run = only_run(f"sqlite:///{tmp_path / f'seed{seed}' / 'mlflow.db'}", "parl")
        assert run.info.run_name == f"seed{seed}"
        assert run.info.status == "FINISHED"
        assert history(client, run, "charts/SPS") == [(seed, 1000.0 + seed)]
