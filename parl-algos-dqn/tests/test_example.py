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


def _load_example():
    import importlib.util

    sys.path.insert(0, str(EXAMPLE.parent))
    spec = importlib.util.spec_from_file_location("dqn_example_train", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_keep_better_restores_the_policy_that_plays_fresh_episodes_better() -> None:
    from parl.utils import make_vector_env

    import numpy as np

    from parl_algos_dqn import DQN, DQNAgent, QNetwork

    example = _load_example()
    agent = DQNAgent(DQN(QNetwork(4, 2, hidden_sizes=(2,))), act_dim=2)
    constant = {k: np.zeros_like(v) for k, v in agent.alg.get_weights().items()}
    # Push towards where the pole falls: right when angle + angular velocity > 0.
    balancing = dict(constant)
    balancing["body.0.weight"] = np.array([[0, 0], [0, 0], [1, -1], [1, -1]], np.float32)
    balancing["head.weight"] = np.array([[0, 1], [1, 0]], np.float32)
    eval_envs = make_vector_env("CartPole-v1", 4)

    agent.alg.set_weights(constant)
    kept, restored = example.keep_better(agent, balancing, eval_envs, 4, seed=0)
    assert restored and kept > 100
    np.testing.assert_array_equal(agent.alg.get_weights()["head.weight"], balancing["head.weight"])

    again, restored = example.keep_better(agent, constant, eval_envs, 4, seed=0)
    assert not restored and again == kept
    np.testing.assert_array_equal(agent.alg.get_weights()["head.weight"], balancing["head.weight"])
    eval_envs.close()
