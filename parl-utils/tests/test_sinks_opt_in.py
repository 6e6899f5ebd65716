"""The opt-in sinks (MLflow, W&B): off unless named in PARL_ENABLED_SINKS, clear when unusable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from parl.utils import summary

import pytest

LOG_AND_LIST_IMPORTS = """
import sys
from parl.utils import summary
summary.set_logdir(sys.argv[1])
summary.add_params({"lr": 0.1})
summary.add_scalar("charts/episodic_return", 1.0, step=1)
summary.close()
print(sorted({"mlflow", "wandb"} & set(sys.modules)))
"""


def test_not_enabled_they_write_nothing_and_import_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PARL_ENABLED_SINKS", raising=False)
    done = subprocess.run(
        [sys.executable, "-c", LOG_AND_LIST_IMPORTS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    # Only the always-on sinks wrote: one TensorBoard event file and metrics.csv.
    assert sorted(p.name.split(".")[0] for p in tmp_path.iterdir()) == ["events", "metrics"]


@pytest.mark.parametrize("sink", ["mlflow", "wandb"])
def test_enabled_without_its_library_names_the_extra(
    sink: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARL_ENABLED_SINKS", sink)
    monkeypatch.setitem(sys.modules, sink, None)  # what `import` sees when it is not installed
    summary.set_logdir(tmp_path)
    with pytest.raises(ImportError, match=rf"pip install 'parl-utils\[{sink}\]'"):
        summary.add_scalar("charts/episodic_return", 1.0, step=1)
    assert not (tmp_path / "mlflow.db").exists()
    assert not (tmp_path / "wandb").exists()


@pytest.mark.parametrize("value", ["mlfow", "mlflow,tensorboard"])
def test_unknown_name_lists_the_opt_in_sinks(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARL_ENABLED_SINKS", value)
    summary.set_logdir(tmp_path)
    with pytest.raises(ValueError, match=r"no opt-in sink; the opt-in sinks are mlflow, wandb"):
        summary.add_scalar("charts/episodic_return", 1.0, step=1)
