"""The CartPole example runs end to end (its transition bookkeeping is parl-utils's
RolloutCollector, tested in parl-utils/tests/test_rollout.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "DQN" / "train.py"


def test_train_script_runs_with_a_tiny_budget(tmp_path) -> None:
    logdir = tmp_path / "run"
    completed = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--algo",
            "DDQN",
            "--dueling",
            "--total-steps",
            "400",
            "--num-envs",
            "2",
            "--learning-starts",
            "100",
            "--train-freq",
            "100",
            "--gradient-steps",
            "5",
            "--eval-interval",
            "200",
            "--eval-episodes",
            "2",
            "--logdir",
            str(logdir),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2_000:]
    assert "final evaluation: mean greedy return" in completed.stdout + completed.stderr
    assert (logdir / "model.ckpt").is_file()
    assert (logdir / "best_model.ckpt").is_file()
    rows = (logdir / "metrics.csv").read_text().splitlines()
    tags = {row.split(",")[1] for row in rows[1:]}
    assert {"charts/episodic_return", "charts/SPS", "charts/epsilon"} <= tags
    assert {"losses/td_loss", "eval/episodic_return"} <= tags
