"""The CartPole example: vector-env transition bookkeeping and a tiny end-to-end run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

from parl.utils.replay_memory import ReplayMemory

import gymnasium as gym
import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "DQN" / "train.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("dqn_example_train", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CounterEnv(gym.Env):
    """Observation ``[episode id, step]``; terminates at random, or is truncated by a time limit."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0.0, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.episode = -1.0
        self.t = 0.0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.episode += 1.0
        self.t = 0.0
        return np.array([self.episode, self.t], np.float32), {}

    def step(self, action):
        self.t += 1.0
        terminated = bool(self.np_random.random() < 0.15)
        return np.array([self.episode, self.t], np.float32), 1.0, terminated, False, {}


def test_no_transition_crosses_an_episode_boundary(example) -> None:
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.TimeLimit(CounterEnv(), max_episode_steps=5) for _ in range(3)],
        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
    )
    rpm = ReplayMemory(1_000, obs_dim=2, act_dim=0, seed=0)
    obs, _ = envs.reset(seed=0)
    fresh = np.zeros(3, dtype=bool)
    stored = truncations = terminations = 0
    for _ in range(200):
        actions = np.zeros(3, dtype=np.int64)
        next_obs, reward, terminated, truncated, _ = envs.step(actions)
        stored += example.store_transitions(rpm, fresh, obs, actions, reward, next_obs, terminated)
        truncations += int((truncated & ~terminated).sum())
        terminations += int(terminated.sum())
        fresh = terminated | truncated
        obs = next_obs
    assert truncations > 0 and terminations > 0  # both kinds of episode end were exercised
    assert stored == len(rpm)
    obs, _, reward, next_obs, terminal = rpm.sample_batch_by_index(np.arange(len(rpm)))
    np.testing.assert_array_equal(next_obs[:, 0], obs[:, 0])  # same episode
    np.testing.assert_array_equal(next_obs[:, 1], obs[:, 1] + 1)  # consecutive steps
    assert np.all(reward == 1.0)
    # A time-limit truncation (step 5 without termination) is stored as non-terminal.
    assert terminal.sum() == terminations
    assert np.any((next_obs[:, 1] == 5) & ~terminal)


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
