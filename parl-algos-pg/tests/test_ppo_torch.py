"""PPO on torch against PPO on paddle: one learn from the same weights, device errors, example."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import parl
from parl.testing.contract import copy_weights_across, max_weight_difference

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

import parl_algos_pg  # noqa: E402
import parl_algos_pg.torch as ppo_torch  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ONE_LEARN_ATOL = 1e-6
"""After one gradient step of Adam (lr 3e-4), the backends' float32 arithmetic differs by ~1e-8."""


def _pair(continuous: bool):
    """A paddle and a torch PPOAgent with the shipped models and the same weights."""
    parl.set_seed(0, backend="paddle")
    obs_dim, act_dim = 4, 2
    options = {"continuous_action": continuous, "initial_lr": 3e-4, "clip_param": 0.2}
    agents = []
    for family in (parl_algos_pg, ppo_torch):
        model_cls = family.ContinuousPPOModel if continuous else family.DiscretePPOModel
        agents.append(family.PPOAgent(family.PPO(model_cls(obs_dim, act_dim, 16), **options), 0))
    copy_weights_across(*agents)
    assert max_weight_difference(*agents) == 0.0
    return agents


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_one_learn_matches_paddle(continuous: bool) -> None:
    paddle_agent, torch_agent = _pair(continuous)
    rng = np.random.default_rng(5)
    obs = rng.normal(size=(32, 4)).astype(np.float32)
    action = (
        rng.uniform(-1, 1, size=(32, 2)).astype(np.float32)
        if continuous
        else rng.integers(0, 2, size=32)
    )
    value, returns = rng.normal(size=(2, 32)).astype(np.float32)
    logp = rng.normal(-1.0, 0.3, size=32).astype(np.float32)
    before = paddle_agent.get_weights()
    losses = [
        agent.alg.learn(obs, action, value, returns, logp, returns - value)
        for agent in (paddle_agent, torch_agent)
    ]
    assert any(not np.array_equal(v, paddle_agent.get_weights()[k]) for k, v in before.items())
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5, atol=1e-6)
    difference = max_weight_difference(paddle_agent, torch_agent)
    kind = "continuous" if continuous else "discrete"
    print(
        f"PPO ({kind}): max |paddle - torch| weight difference after one learn = {difference:.3g}"
    )
    assert difference <= ONE_LEARN_ATOL


def test_cuda_without_a_gpu_is_a_clear_error_and_moves_nothing() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: this test is of the error without one")
    algorithm = ppo_torch.PPO(ppo_torch.DiscretePPOModel(4, 2))
    with pytest.raises(ValueError, match=r"needs a GPU, but torch.cuda.is_available\(\) is False"):
        ppo_torch.PPOAgent(algorithm, 0, device="cuda")
    assert algorithm.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in algorithm.model.parameters())


def test_agent_refuses_a_paddle_ppo() -> None:
    with pytest.raises(TypeError, match="needs a torch PPO algorithm, got PPO"):
        ppo_torch.PPOAgent(parl_algos_pg.PPO(parl_algos_pg.DiscretePPOModel(4, 2)))


def test_registry_gives_the_torch_class() -> None:
    assert parl.algorithms.get("PPO", backend="torch") is ppo_torch.PPO
    assert ppo_torch.PPOConfig is parl_algos_pg.PPOConfig


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_example_runs_on_torch(tmp_path: Path, env_id: str) -> None:
    script = REPO / "examples" / "PPO" / "train.py"
    args = ["--env-id", env_id, "--total-steps", "256", "--num-envs", "1", "--quiet"]
    args += ["--backend", "torch", "--device", "cpu", "--logdir", str(tmp_path)]
    result = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "final evaluation: mean greedy return" in result.stdout
    assert "backend: torch" in (tmp_path / "config.yaml").read_text()
