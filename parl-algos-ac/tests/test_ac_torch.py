"""The family on torch: what the contract suite does not cover (devices, the models' layout,
the PARL 2.x torch signatures, the examples with ``--backend torch --device cpu``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import parl

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parl_algos_ac import (  # noqa: E402
    A2C,
    CQL,
    SAC,
    A2CConfig,
    ContinuousAgent,
    DiscreteActorCritic,
    GaussianActorCritic,
    GaussianActorCriticValue,
)

REPO = Path(__file__).resolve().parents[2]
FAMILY = ("A2C", "CQL", "DDPG", "DT", "IQL", "OAC", "SAC", "TD3")


def test_every_algorithm_of_the_family_is_registered_on_both_frameworks() -> None:
    for name in FAMILY:
        assert parl.algorithms.get(name, backend="torch") is parl.algorithms.get(
            name, backend="paddle"
        )


def test_cuda_without_a_gpu_is_a_clear_error_and_moves_nothing() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: this test is of the error without one")
    algorithm = CQL(GaussianActorCritic(3, 1, (8,), backend="torch"), with_lagrange=True)
    with pytest.raises(ValueError, match=r"needs a GPU, but torch.cuda.is_available\(\) is False"):
        ContinuousAgent(algorithm, device="cuda")
    assert algorithm.device == torch.device("cpu")
    assert algorithm.log_alpha.device.type == "cpu"
    assert algorithm.log_alpha_prime.device.type == "cpu"
    assert all(p.device.type == "cpu" for p in algorithm.model.parameters())


def test_learnable_scalars_are_trainable_only_when_learned() -> None:
    model = GaussianActorCritic(3, 1, (8,), backend="torch")
    assert SAC(model, alpha="auto").log_alpha.requires_grad
    fixed = SAC(GaussianActorCritic(3, 1, (8,), backend="torch"), alpha=0.2)
    assert not fixed.log_alpha.requires_grad and fixed.alpha_optimizer is None
    assert float(fixed.alpha) == pytest.approx(0.2)


@pytest.mark.parametrize("model_class", [GaussianActorCritic, GaussianActorCriticValue])
def test_torch_model_has_the_paddle_models_weight_names_and_shapes(model_class) -> None:
    paddle_weights = model_class(3, 2, (8, 8), backend="paddle").get_weights()
    torch_weights = model_class(3, 2, (8, 8), backend="torch").get_weights()
    assert sorted(paddle_weights) == sorted(torch_weights)
    for name, value in torch_weights.items():
        # torch Linear weights are [out, in]; the ensemble's stacked weights share a layout.
        expected = paddle_weights[name].shape
        transposed = name.endswith(".weight")
        assert value.shape == (expected[::-1] if transposed else expected), name


def test_initialisation_bounds_are_the_same_on_both_frameworks() -> None:
    """Hidden layers and critics U(±1/sqrt(fan_in)); output biases zero."""
    for backend in ("paddle", "torch"):
        weights = GaussianActorCritic(4, 1, (16,), backend=backend).get_weights()
        assert np.abs(weights["actor.0.weight"]).max() <= 0.5  # fan_in 4
        assert np.abs(weights["critic.weights.1"]).max() <= 0.25  # fan_in 16
        assert not weights["actor.2.bias"].any()


def test_sample_and_predict_shapes_and_bounds() -> None:
    agent = ContinuousAgent(SAC(GaussianActorCritic(3, 2, (8,), backend="torch")))
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    assert agent.sample(obs).shape == (5, 2) and np.abs(agent.sample(obs)).max() < 1
    assert agent.predict(obs[0]).shape == (2,)


def test_a2c_takes_parl_torch_config_dict() -> None:
    """PARL 2.2.1's torch A2C is ``A2C(model, config)`` with a dict."""
    model = DiscreteActorCritic(4, 2, backend="torch")
    a2c = A2C(model, {"vf_loss_coeff": 0.25, "learning_rate": 2e-3})
    assert a2c.config == A2CConfig(vf_loss_coeff=0.25, initial_lr=2e-3)
    assert a2c.optimizer.param_groups[0]["lr"] == pytest.approx(2e-3)


def _run(script: str, *args: str, tmp_path: Path) -> str:
    command = [sys.executable, str(REPO / "examples" / script / "train.py"), *args]
    command += ["--backend", "torch", "--device", "cpu", "--logdir", str(tmp_path), "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "backend: torch" in (tmp_path / "config.yaml").read_text()
    rows = (tmp_path / "metrics.csv").read_text().splitlines()[1:]
    return " ".join(sorted({row.split(",")[1] for row in rows}))


@pytest.mark.parametrize("algo", ["SAC", "TD3"])
def test_off_policy_example_runs_on_torch(algo, tmp_path: Path) -> None:
    args = ["--algo", algo, "--total-steps", "300", "--learning-starts", "200"]
    args += ["--eval-every", "300", "--eval-episodes", "1", "--hidden-sizes", "16"]
    assert "eval/episodic_return" in _run("SAC", *args, tmp_path=tmp_path)


def test_offline_example_runs_on_torch(tmp_path: Path) -> None:
    args = ["--algo", "CQL", "--build", "random", "--dataset-size", "300", "--total-steps", "30"]
    args += ["--batch-size", "32", "--policy-eval-start", "10", "--eval-every", "30"]
    args += ["--eval-episodes", "1", "--hidden-sizes", "16"]
    assert "eval/episodic_return" in _run("CQL", *args, tmp_path=tmp_path)
