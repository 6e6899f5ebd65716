"""SAC on torch: what the contract suite does not cover (device errors, the agent, the example)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import parl
from parl.testing.contract import copy_weights_across, max_weight_difference, same_random_draws

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

import parl_algos_ac  # noqa: E402
from parl_algos_ac import torch as ac_torch  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


ONE_LEARN_ATOL = 1e-6
"""After one SAC learn (Adam, lr 3e-3), the backends' float32 arithmetic differs by ~1e-7."""


@pytest.mark.parametrize("alpha", [0.01, "auto"])
def test_one_learn_matches_paddle(alpha) -> None:
    """The paddle and the torch SAC, same weights, batch and policy noise: one learn agrees."""
    parl.set_seed(0, backend="paddle")
    paddle_agent = parl_algos_ac.ContinuousAgent(
        parl_algos_ac.SAC(parl_algos_ac.GaussianActorCritic(3, 2, (32, 32)), alpha=alpha)
    )
    torch_agent = ac_torch.ContinuousAgent(
        ac_torch.SAC(ac_torch.GaussianActorCritic(3, 2, (32, 32)), alpha=alpha)
    )
    copy_weights_across(paddle_agent, torch_agent)
    rng = np.random.default_rng(5)
    obs, next_obs = rng.normal(size=(2, 64, 3)).astype(np.float32)
    action = rng.uniform(-1, 1, size=(64, 2)).astype(np.float32)
    reward, terminal = rng.normal(size=64).astype(np.float32), rng.random(64) < 0.1
    with same_random_draws(11):
        losses = [
            [float(loss) for loss in agent.learn(obs, action, reward, next_obs, terminal)]
            for agent in (paddle_agent, torch_agent)
        ]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    difference = max_weight_difference(paddle_agent, torch_agent)
    alphas = [float(agent.alg.alpha) for agent in (paddle_agent, torch_agent)]
    print(
        f"SAC (alpha={alpha}): max |paddle - torch| weight difference after one learn = "
        f"{difference:.3g}; alpha {alphas[0]:.7g} vs {alphas[1]:.7g}"
    )
    assert difference <= ONE_LEARN_ATOL
    np.testing.assert_allclose(alphas[0], alphas[1], rtol=1e-6)


def test_cuda_without_a_gpu_is_a_clear_error_and_moves_nothing() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: this test is of the error without one")
    algorithm = ac_torch.SAC(ac_torch.GaussianActorCritic(3, 1, (8,)), alpha="auto")
    with pytest.raises(ValueError, match=r"needs a GPU, but torch.cuda.is_available\(\) is False"):
        ac_torch.ContinuousAgent(algorithm, device="cuda")
    assert algorithm.device == torch.device("cpu")
    assert algorithm.log_alpha.device.type == "cpu"
    assert all(p.device.type == "cpu" for p in algorithm.model.parameters())


def test_agent_refuses_a_paddle_algorithm_naming_what_runs_on_torch() -> None:
    paddle_sac = parl_algos_ac.SAC(parl_algos_ac.GaussianActorCritic(3, 1, (8,)))
    with pytest.raises(TypeError, match="needs a torch SAC algorithm"):
        ac_torch.ContinuousAgent(paddle_sac)


def test_torch_model_has_the_paddle_models_weight_names_and_shapes() -> None:
    paddle_weights = parl_algos_ac.GaussianActorCritic(3, 2, (8, 8)).get_weights()
    torch_weights = ac_torch.GaussianActorCritic(3, 2, (8, 8)).get_weights()
    assert sorted(paddle_weights) == sorted(torch_weights)
    for name, value in torch_weights.items():
        # torch Linear weights are [out, in]; the ensemble's stacked weights share a layout.
        expected = paddle_weights[name].shape
        transposed = name.startswith("actor.") and name.endswith(".weight")
        assert value.shape == (expected[::-1] if transposed else expected), name


def test_sample_and_predict_shapes_and_bounds() -> None:
    agent = ac_torch.ContinuousAgent(ac_torch.SAC(ac_torch.GaussianActorCritic(3, 2, (8,))))
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    assert agent.sample(obs).shape == (5, 2) and np.abs(agent.sample(obs)).max() < 1
    assert agent.predict(obs[0]).shape == (2,)


def test_registry_gives_the_torch_class() -> None:
    assert parl.algorithms.get("SAC", backend="torch") is ac_torch.SAC
    assert ac_torch.SACConfig is parl_algos_ac.SACConfig


def test_example_runs_on_torch(tmp_path: Path) -> None:
    script = REPO / "examples" / "SAC" / "train.py"
    args = ["--total-steps", "300", "--learning-starts", "200", "--eval-every", "300"]
    args += ["--eval-episodes", "1", "--hidden-sizes", "16", "--quiet"]
    args += ["--backend", "torch", "--device", "cpu", "--logdir", str(tmp_path)]
    result = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "backend: torch" in (tmp_path / "config.yaml").read_text()
    tags = {row.split(",")[1] for row in (tmp_path / "metrics.csv").read_text().splitlines()[1:]}
    assert "eval/episodic_return" in tags


def test_example_refuses_a_paddle_only_algorithm_on_torch(tmp_path: Path) -> None:
    script = REPO / "examples" / "SAC" / "train.py"
    args = ["--algo", "TD3", "--backend", "torch", "--total-steps", "10", "--quiet"]
    result = subprocess.run(
        [sys.executable, str(script), *args, "--logdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "--algo TD3 runs on paddle only" in result.stderr
