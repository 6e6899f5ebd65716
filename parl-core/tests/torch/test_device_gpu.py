"""Setting a torch agent's device on a machine with a GPU: the algorithm moves there and back.

Not torch-marked: the ``torch`` session runs on CPU-only CI, where this cannot run and may not
skip. Run it where a GPU is: ``pytest parl-core/tests/torch/test_device_gpu.py``.
"""

from __future__ import annotations

import parl

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU: moves an agent's algorithm to it", allow_module_level=True)

from .learners import LEARNERS  # noqa: E402
from .test_core import OneHot, PARLStyleAgent, Regression, RegressionAgent  # noqa: E402


def test_setting_the_device_moves_models_optimizer_state_and_learnable_scalars() -> None:
    parl.set_seed(0, backend="torch")
    agent = RegressionAgent(Regression(OneHot()))
    obs = np.eye(4, dtype=np.float32)
    agent.learn(obs, obs)  # Adam's slots exist now, on the CPU
    agent.device = torch.device("cuda")
    alg = agent.alg
    slots = [s for state in alg.optimizer.state.values() for k, s in state.items() if k != "step"]
    on_gpu = [*alg.model.parameters(), alg.scale, *slots]
    assert agent.device.type == "cuda" and all(t.device.type == "cuda" for t in on_gpu)
    loss = agent.learn(obs, obs)  # the optimizer built on the CPU keeps working
    assert np.isfinite(loss) and agent.predict(obs).shape == (4,)
    agent.device = "cpu"
    assert all(t.device.type == "cpu" for t in [*alg.model.parameters(), alg.scale])
    built_on_gpu = PARLStyleAgent(Regression(OneHot()), torch.device("cuda"), before=True)
    assert all(p.device.type == "cuda" for p in built_on_gpu.alg.model.parameters())


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_learn_on_the_gpu_never_synchronises(name: str) -> None:
    """Every registered torch algorithm's update on a batch already on the GPU: torch raises on
    any synchronising call (a scalar read, a copy to the host, a blocking copy from it)."""
    torch.manual_seed(0)
    algorithm, batch = LEARNERS[name]("cuda")
    for _ in range(2):  # the optimizers' slots exist from here on
        algorithm.learn(*batch)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(2):
            algorithm.learn(*batch)
    finally:
        torch.cuda.set_sync_debug_mode("default")


ISSUE_36 = ["DQN", "DDPG", "TD3", "SAC", "OAC", "CQL", "IQL", "PPO", "IMPALA", "MADDPG", "QMIX"]


@pytest.mark.parametrize("name", ISSUE_36)
def test_the_captured_update_equals_the_eager_one_on_the_gpu(name: str) -> None:
    """compile=True on CUDA (CUDA graphs) against eager, with inductor drawing torch's randoms."""
    with torch._inductor.config.patch(fallback_random=True):
        torch.manual_seed(0)
        eager, batch = LEARNERS[name]("cuda")
        torch.manual_seed(0)
        captured, _ = LEARNERS[name]("cuda", compile=True)
        for step in range(4):
            torch.manual_seed(step)
            expected = eager.learn(*batch)
            torch.manual_seed(step)
            torch.testing.assert_close(captured.learn(*batch), expected, rtol=1e-4, atol=1e-5)
