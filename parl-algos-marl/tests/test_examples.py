"""The multi-agent examples on torch with tiny budgets (the nox examples session runs them on
paddle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TINY = ["--total-steps", "300", "--eval-every", "150", "--eval-episodes", "2", "--quiet"]
OPTIONS = {
    "MADDPG": ["--batch-size", "32", "--min-memory-size", "64", "--learn-every", "10"],
    "MAPPO": ["--num-envs", "2", "--num-steps", "25", "--update-epochs", "1"],
    "QMIX": [
        *("--batch-episodes", "4", "--td-lambda", "0.6", "--anneal-lr"),
        *("--target-tau", "0.5", "--update-target-interval", "2"),
    ],
    "COMA": ["--batch-episodes", "2"],
}


@pytest.mark.torch
@pytest.mark.parametrize("algo", sorted(OPTIONS))
def test_example_runs_on_torch(tmp_path, algo) -> None:
    _runs_and_evaluates(tmp_path, algo, OPTIONS[algo])


@pytest.mark.torch
def test_qmix_example_trains_agents_of_different_sizes(tmp_path) -> None:
    # simple_speaker_listener's speaker sees 3 numbers and has 3 words, its listener sees 11
    # and has 5 moves: the example pads them to one network's sizes (it refused them before).
    _runs_and_evaluates(tmp_path, "QMIX", [*OPTIONS["QMIX"], "--env-id", "simple_speaker_listener"])


def _runs_and_evaluates(tmp_path: Path, algo: str, options: list[str]) -> None:
    """Run the example on torch with a tiny budget; it must exit cleanly and log evaluations."""
    pytest.importorskip("torch")
    pytest.importorskip("pettingzoo")
    logdir = tmp_path / "run"
    command = [sys.executable, str(EXAMPLES / algo / "train.py"), "--backend", "torch"]
    command += ["--device", "cpu", *TINY, *options, "--logdir", str(logdir)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-2_000:]
    rows = (logdir / "metrics.csv").read_text().splitlines()
    assert "eval/episodic_return" in {row.split(",")[1] for row in rows[1:]}
