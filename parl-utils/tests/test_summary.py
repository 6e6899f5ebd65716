from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import parl
from parl.plugins import get_plugin_manager, reset_plugin_manager
from parl.utils import logger, summary

import numpy as np
import pytest

from .conftest import read_events


def read_tensorboard_scalars(logdir: Path) -> list[tuple[int, str, float]]:
    """``(step, tag, value)`` of every scalar in the event files of ``logdir``."""
    events = read_events(logdir)
    values = [(e.step, v) for e in events for v in e.summary.value if v.HasField("simple_value")]
    return [(step, v.tag, v.simple_value) for step, v in values]


def read_metrics_csv(logdir: Path) -> list[dict[str, str]]:
    with (logdir / "metrics.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_scalars_reach_csv_and_tensorboard(tmp_path: Path) -> None:
    summary.set_logdir(tmp_path / "run")
    summary.add_scalar("charts/episodic_return", 21.5, step=100)
    summary.add_scalars({"losses/value": np.float32(0.25), "losses/policy": -1.0}, step=200)
    summary.add_scalar("charts/SPS", np.array([1234.0]), step=np.int64(300))
    summary.close()

    rows = read_metrics_csv(tmp_path / "run")
    assert [(r["step"], r["tag"], float(r["value"])) for r in rows] == [
        ("100", "charts/episodic_return", 21.5),
        ("200", "losses/value", 0.25),
        ("200", "losses/policy", -1.0),
        ("300", "charts/SPS", 1234.0),
    ]
    scalars = read_tensorboard_scalars(tmp_path / "run")
    assert (100, "charts/episodic_return", 21.5) in scalars
    assert (200, "losses/value", 0.25) in scalars
    assert (300, "charts/SPS", 1234.0) in scalars


def test_the_first_metric_imports_no_framework(tmp_path: Path) -> None:
    """A paddle run with torch installed beside it: its first metric (and histogram) loads the
    sinks, which must not import torch, paddle or tensorboardX (which imports torch)."""
    importlib.util.find_spec("torch") or pytest.skip(
        "needs torch installed to prove it is not imported"
    )
    code = (
        "import sys\n"
        "from parl.utils import summary\n"
        f"summary.set_logdir({str(tmp_path)!r})\n"
        "summary.add_scalar('charts/episodic_return', 1.0, step=1)\n"
        "summary.add_histogram('weights', [0.5, 1.5], step=1)\n"
        "summary.close()\n"
        "print(sorted(m for m in ('torch', 'paddle', 'tensorboardX') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert read_tensorboard_scalars(tmp_path) == [(1, "charts/episodic_return", 1.0)]


def test_flush_puts_values_on_disk_and_logging_continues(tmp_path: Path) -> None:
    summary.set_logdir(tmp_path)
    summary.add_scalar("a", 1.0, 1)
    summary.flush()
    assert (1, "a", 1.0) in read_tensorboard_scalars(tmp_path)
    summary.add_scalar("b", 2.0, 2)
    summary.close()
    assert [r["tag"] for r in read_metrics_csv(tmp_path)] == ["a", "b"]
    assert (2, "b", 2.0) in read_tensorboard_scalars(tmp_path)
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 1


def test_disabled_csv_plugin_writes_no_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARL_DISABLED_PLUGINS", "csv")
    reset_plugin_manager()
    summary.set_logdir(tmp_path)
    summary.add_scalar("charts/episodic_return", 3.0, 7)
    summary.close()
    assert not (tmp_path / "metrics.csv").exists()
    assert (7, "charts/episodic_return", 3.0) in read_tensorboard_scalars(tmp_path)


def test_logdir_defaults_to_logger_dir(tmp_path: Path) -> None:
    logger.set_dir(tmp_path / "logger_dir")
    summary.add_scalar("x", 1.0, 0)
    summary.close()
    assert summary.get_logdir() == tmp_path / "logger_dir"
    assert read_metrics_csv(tmp_path / "logger_dir")[0]["tag"] == "x"


def test_set_logdir_closes_previous_run(tmp_path: Path) -> None:
    summary.set_logdir(tmp_path / "one")
    summary.add_scalar("x", 1.0, 0)
    summary.set_logdir(tmp_path / "two")
    # The first run's TensorBoard writer was closed, so its file is complete.
    assert read_tensorboard_scalars(tmp_path / "one") == [(0, "x", 1.0)]
    summary.add_scalar("y", 2.0, 0)
    summary.close()
    assert [r["tag"] for r in read_metrics_csv(tmp_path / "two")] == ["y"]


def test_third_party_plugin_receives_metrics(tmp_path: Path) -> None:
    received: list[tuple[dict[str, float], int, Path]] = []
    closed: list[Path] = []

    class Sink:
        @parl.hookimpl
        def parl_log_metrics(self, metrics: Mapping[str, float], step: int, logdir: Path):
            received.append((dict(metrics), step, logdir))

        @parl.hookimpl
        def parl_close_metrics(self, logdir: Path) -> None:
            closed.append(logdir)

    get_plugin_manager().register(Sink())
    summary.set_logdir(tmp_path)
    summary.add_scalars({"a": 1, "b": 2.5}, step=3)
    summary.close()
    assert received == [({"a": 1.0, "b": 2.5}, 3, tmp_path)]
    assert closed == [tmp_path]


def test_params_reach_plugins_and_bad_params_are_rejected(tmp_path: Path) -> None:
    received: list[tuple[dict[str, object], Path]] = []

    class Tracker:
        @parl.hookimpl
        def parl_log_params(self, params: Mapping[str, object], logdir: Path) -> None:
            received.append((dict(params), logdir))

    get_plugin_manager().register(Tracker())
    summary.set_logdir(tmp_path)
    summary.add_params({"lr": 0.001, "hidden_sizes": [64, 64], "env": {"id": "CartPole-v1"}})
    with pytest.raises(TypeError, match=r"param 'logdir' must be a JSON value.*str\(path\)"):
        summary.add_params({"seed": 1, "logdir": tmp_path})
    with pytest.raises(TypeError, match="param 'lr' must be a JSON value.*without NaN"):
        summary.add_params({"lr": float("nan")})
    with pytest.raises(TypeError, match="param names must be non-empty strings, got 3"):
        summary.add_params({3: "x"})  # type: ignore[dict-item]
    # Nothing of a refused call reached the plugin.
    assert received == [
        ({"lr": 0.001, "hidden_sizes": [64, 64], "env": {"id": "CartPole-v1"}}, tmp_path)
    ]


def test_close_without_metrics_is_noop(tmp_path: Path) -> None:
    summary.set_logdir(tmp_path)
    summary.close()
    summary.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("step", [1.5, "10", None])
def test_bad_step_is_rejected(step: object) -> None:
    with pytest.raises(TypeError, match="step must be an integer"):
        summary.add_scalar("x", 1.0, step)  # type: ignore[arg-type]


def test_bad_value_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"metric 'x' must be a real number.*'abc'"):
        summary.add_scalar("x", "abc", 1)  # type: ignore[arg-type]
