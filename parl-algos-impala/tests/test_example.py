"""The IMPALA example on torch with a tiny budget (the actor in the learner's process; the nox
examples session runs it on paddle with remote actors)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "IMPALA" / "train.py"


@pytest.mark.torch
def test_train_script_runs_on_torch(tmp_path) -> None:
    pytest.importorskip("torch")
    logdir = tmp_path / "run"
    command = [sys.executable, str(EXAMPLE), "--backend", "torch", "--device", "cpu"]
    command += ["--num-actors", "0", "--envs-per-actor", "2", "--total-steps", "400"]
    command += ["--eval-every", "200", "--eval-episodes", "2", "--logdir", str(logdir)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert completed.returncode == 0, completed.stderr[-2_000:]
    assert (logdir / "model.ckpt").is_file(), sorted(p.name for p in logdir.iterdir())
    rows = (logdir / "metrics.csv").read_text().splitlines()
    tags = {row.split(",")[1] for row in rows[1:]}
    assert {"losses/pi", "eval/episodic_return"} <= tags, tags
