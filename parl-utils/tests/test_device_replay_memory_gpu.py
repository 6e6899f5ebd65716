"""DeviceReplayMemory on a CUDA GPU: the fields live there, and sampling never waits for the host.

Not torch-marked: the ``torch`` session runs on CPU-only CI, where this cannot run and may not
skip. Run it where a GPU is: ``pytest parl-utils/tests/test_device_replay_memory_gpu.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from parl.utils import DeviceReplayMemory, ReplayMemory

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU: keeps a replay memory on it", allow_module_level=True)

SAC_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "SAC" / "train.py"


def filled(seed: int = 0) -> DeviceReplayMemory:
    rpm = DeviceReplayMemory(64, 3, 2, backend="torch", device="cuda", seed=seed)
    rng = np.random.default_rng(0)
    rpm.append_batch(
        rng.normal(size=(80, 3)), rng.uniform(-1, 1, (80, 2)), rng.normal(size=80),
        rng.normal(size=(80, 3)), rng.random(80) < 0.1,
    )  # fmt: skip
    return rpm


def test_fields_and_batches_are_on_the_gpu_and_sampling_never_syncs() -> None:
    rpm = filled()
    assert all(getattr(rpm, f).device.type == "cuda" for f in ("obs", "action", "terminal"))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # a host round trip now raises
    try:
        batch = rpm.sample_batch(256)
        batches = rpm.sample_tensor_batches(256, 4)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert all(field.device.type == "cuda" for field in [*batch, *batches[0]])


def test_same_seed_same_batches_on_the_gpu() -> None:
    first, second = filled(seed=3), filled(seed=3)
    np.testing.assert_array_equal(
        first.sample_batch(32).obs.cpu().numpy(), second.sample_batch(32).obs.cpu().numpy()
    )


def test_files_round_trip_through_the_host_memory(tmp_path: Path) -> None:
    rpm = filled()
    rpm.save(tmp_path / "gpu.npz")
    host = ReplayMemory(64, 3, 2)
    host.load(tmp_path / "gpu.npz")
    np.testing.assert_array_equal(host.obs, rpm.obs.cpu().numpy())
    back = DeviceReplayMemory(64, 3, 2, backend="torch", device="cuda")
    back.load(tmp_path / "gpu.npz")
    np.testing.assert_array_equal(back.obs.cpu().numpy(), host.obs)


def test_sac_example_trains_on_the_gpu_from_a_memory_there(tmp_path: Path) -> None:
    command = [sys.executable, str(SAC_EXAMPLE), "--backend", "torch", "--device", "cuda"]
    command += ["--num-envs", "2", "--total-steps", "300", "--learning-starts", "100"]
    command += ["--eval-every", "300", "--eval-episodes", "2", "--quiet"]
    command += ["--logdir", str(tmp_path / "run")]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-2_000:]
    assert "final evaluation" in completed.stdout
