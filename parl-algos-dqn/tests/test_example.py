"""The CartPole example runs end to end (its transition bookkeeping is parl-utils's
RolloutCollector, tested in parl-utils/tests/test_rollout.py), and the tracker's keep-better
rule, which the example ends with, picks between real DQN policies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "DQN" / "train.py"


def test_train_script_runs_with_a_tiny_budget(tmp_path) -> None:
    check_tiny_run(tmp_path, "--backend", "paddle")


@pytest.mark.torch
def test_train_script_runs_on_torch(tmp_path) -> None:
    pytest.importorskip("torch")
    # The replay memory in torch tensors, sampled with torch's generator (the paddle run: numpy).
    check_tiny_run(tmp_path, "--backend", "torch", "--device", "cpu", "--replay-memory", "device")


@pytest.mark.torch
def test_cuda_without_a_gpu_stops_with_a_clear_error(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: this test is of the error without one")
    command = [sys.executable, str(EXAMPLE), "--backend", "torch", "--device", "cuda"]
    command += ["--total-steps", "10", "--logdir", str(tmp_path), "--quiet"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode != 0
    assert "needs a GPU, but torch.cuda.is_available() is False" in completed.stderr


def check_tiny_run(tmp_path: Path, *backend: str) -> None:
    logdir = tmp_path / "run"
    completed = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            *backend,
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
            "--eval-every",
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
    assert "final evaluation: mean greedy return" in completed.stdout
    assert (logdir / "model.ckpt").is_file()
    assert (logdir / "best_model.ckpt").is_file()
    rows = (logdir / "metrics.csv").read_text().splitlines()
    tags = {row.split(",")[1] for row in rows[1:]}
    assert {"charts/episodic_return", "charts/SPS", "charts/epsilon"} <= tags
    assert {"losses/td_loss", "eval/episodic_return"} <= tags


def test_keep_better_ends_with_the_policy_that_plays_fresh_episodes_better(tmp_path) -> None:
    from parl.utils import EvalTracker, make_vector_env

    import numpy as np

    from parl_algos_dqn import DQN, DQNAgent, QNetwork

    agent = DQNAgent(DQN(QNetwork(4, 2, hidden_sizes=(2,))), act_dim=2)
    constant = {k: np.zeros_like(v) for k, v in agent.alg.get_weights().items()}
    # Push towards where the pole falls: right when angle + angular velocity > 0.
    balancing = dict(constant)
    balancing["body.0.weight"] = np.array([[0, 0], [0, 0], [1, -1], [1, -1]], np.float32)
    balancing["head.weight"] = np.array([[0, 1], [1, 0]], np.float32)

    def tracker(run_dir):
        return EvalTracker(
            agent, make_vector_env("CartPole-v1", 4), eval_every=100, eval_episodes=4, seed=0,
            run_dir=run_dir, env_id="CartPole-v1", log_metrics=False,
        )  # fmt: skip

    # The balancing policy evaluates best, then training "ends" on the constant one.
    first = tracker(tmp_path / "a")
    agent.alg.set_weights(balancing)
    first.update(100)
    agent.alg.set_weights(constant)
    result = first.finish(200, keep_better=True)
    assert result.extra["restored_best"] and result.final_eval_return > 100
    assert result.extra["last_eval_return"] < 20
    np.testing.assert_array_equal(agent.alg.get_weights()["head.weight"], balancing["head.weight"])

    # The best-evaluated policy is the final one: nothing to restore.
    second = tracker(tmp_path / "b")
    second.update(100)
    again = second.finish(100, keep_better=True)
    assert not again.extra["restored_best"] and again.final_eval_return == result.final_eval_return
    np.testing.assert_array_equal(agent.alg.get_weights()["head.weight"], balancing["head.weight"])
