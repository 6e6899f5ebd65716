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
