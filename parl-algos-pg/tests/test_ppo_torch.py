"""The family on torch: PARL's torch shapes, devices, one class per name, the examples."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import parl

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parl_algos_pg import (  # noqa: E402
    PPO,
    DiscretePPOModel,
    PolicyGradient,
    PPOAgent,
)

REPO = Path(__file__).resolve().parents[2]
OBS = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)


def test_sample_has_parl_s_shapes_on_each_framework() -> None:
    """PARL 2.2.1's torch PPO.sample gives actions [B]; its paddle PPO.sample [1, B]."""
    shapes = {}
    for backend in ("paddle", "torch"):
        alg = PPO(DiscretePPOModel(4, 2, 8, backend=backend))
        value, action, logp, entropy = alg.sample(OBS)
        shapes[backend] = [list(t.shape) for t in (value, action, logp, entropy)]
    assert shapes["torch"] == [[5], [5], [5], [5]]
    assert shapes["paddle"] == [[5], [1, 5], [1, 5], [5]]


def test_algorithms_take_a_device() -> None:
    model = DiscretePPOModel(4, 2, backend="torch")
    assert PPO(model, device="cpu").device == torch.device("cpu")
    logits = DiscretePPOModel(4, 2, backend="torch")
    assert PolicyGradient(logits, model_output="logits", device="cpu").device.type == "cpu"


def test_cuda_without_a_gpu_is_a_clear_error_and_moves_nothing() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: this test is of the error without one")
    algorithm = PPO(DiscretePPOModel(4, 2, backend="torch"))
    for make in (lambda: PPOAgent(algorithm, 0, device="cuda"), lambda: algorithm.to("cuda")):
        with pytest.raises(ValueError, match=r"needs a GPU, but torch.cuda.is_available\(\)"):
            make()
    with pytest.raises(ValueError, match=r"needs a GPU, but torch.cuda.is_available\(\)"):
        PPO(DiscretePPOModel(4, 2, backend="torch"), device="cuda")
    assert algorithm.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in algorithm.model.parameters())


@pytest.mark.parametrize("name", ["PolicyGradient", "PPO"])
def test_one_class_serves_both_frameworks(name: str) -> None:
    assert parl.algorithms.get(name, backend="torch") is parl.algorithms.get(name)
    assert name in parl.algorithms.names(backend="torch")


def _run(script: str, args: list[str], tmp_path: Path) -> str:
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / script), *args, "--logdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "final evaluation: mean greedy return" in result.stdout
    assert "backend: torch" in (tmp_path / "config.yaml").read_text()
    return result.stdout


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_ppo_example_runs_on_torch(tmp_path: Path, env_id: str) -> None:
    args = ["--env-id", env_id, "--total-steps", "256", "--num-envs", "1", "--quiet"]
    _run("PPO/train.py", [*args, "--backend", "torch", "--device", "cpu"], tmp_path)


def test_quickstart_runs_on_torch(tmp_path: Path) -> None:
    args = ["--max-episodes", "3", "--eval-every", "50", "--quiet"]
    _run("QuickStart/train.py", [*args, "--backend", "torch", "--device", "cpu"], tmp_path)
    assert (tmp_path / "model.ckpt").is_file()
