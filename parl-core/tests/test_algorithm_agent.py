"""parl.Algorithm configs and weights; parl.Agent checkpoints, export and modes."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
from pathlib import Path

import parl
from parl.core.config import AlgorithmConfig
from parl.core.errors import CheckpointError, ModelContractError, WeightsMismatchError
from parl.plugins import get_plugin_manager, hookimpl

import numpy as np
import paddle
import pydantic
import pytest
from pydantic import PositiveFloat


class TinyConfig(AlgorithmConfig):
    lr: PositiveFloat = 1e-3
    """Learning rate."""
    gamma: float = pydantic.Field(0.99, gt=0.0, le=1.0)
    """Discount factor."""


class TinyAlgorithm(parl.Algorithm):
    """Tiny algorithm with an online and a target model, for tests."""

    Config = TinyConfig
    required_model_methods = ("forward",)

    def __init__(self, model, lr=None, gamma=None, **options) -> None:
        super().__init__(model, lr=lr, gamma=gamma, **options)
        self.target_model = copy.deepcopy(model)

    def predict(self, obs):
        return self.model(obs)


class TinyAgent(parl.Agent):
    def predict(self, obs: np.ndarray) -> np.ndarray:
        return self.alg.predict(paddle.to_tensor(obs, dtype="float32")).numpy()


@pytest.fixture
def agent(tiny_model_cls: type) -> TinyAgent:
    return TinyAgent(TinyAlgorithm(tiny_model_cls(), lr=0.01))


OBS = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)


def test_config_from_keywords_and_mapping(tiny_model_cls: type) -> None:
    alg = TinyAlgorithm(tiny_model_cls(), lr=0.5, config={"gamma": 0.9})
    assert (alg.config.lr, alg.config.gamma) == (0.5, 0.9)
    with pytest.raises(pydantic.ValidationError):
        alg.config.lr = 1.0  # type: ignore[misc]


def test_config_typo_names_the_field(tiny_model_cls: type) -> None:
    with pytest.raises(pydantic.ValidationError, match="gama"):
        TinyAlgorithm(tiny_model_cls(), gama=0.9)


def test_config_out_of_range_names_the_field(tiny_model_cls: type) -> None:
    with pytest.raises(pydantic.ValidationError, match="lr"):
        TinyAlgorithm(tiny_model_cls(), lr=-1)


def test_model_without_forward_is_a_contract_error() -> None:
    class NoForward(parl.Model):
        pass

    with pytest.raises(ModelContractError, match="'forward'"):
        TinyAlgorithm(NoForward())
    with pytest.raises(TypeError, match="parl.Model"):
        TinyAlgorithm(paddle.nn.Linear(2, 2))


def test_algorithm_weights_cover_every_model(agent: TinyAgent, tiny_model_cls: type) -> None:
    weights = agent.get_weights()
    assert sorted(weights) == ["model", "target_model"]
    other = TinyAgent(TinyAlgorithm(tiny_model_cls()))
    other.set_weights(weights)
    np.testing.assert_array_equal(other.predict(OBS), agent.predict(OBS))


def test_algorithm_set_weights_checks_all_before_writing(agent: TinyAgent) -> None:
    weights = agent.get_weights()
    broken = copy.deepcopy(weights)
    broken["model"] = {k: v + 1 for k, v in broken["model"].items()}
    broken["target_model"]["fc2.bias"] = np.zeros(7, dtype=np.float32)
    with pytest.raises(WeightsMismatchError, match="fc2.bias.*TinyAlgorithm.target_model"):
        agent.set_weights(broken)
    np.testing.assert_array_equal(
        agent.get_weights()["model"]["fc1.weight"], weights["model"]["fc1.weight"]
    )
    with pytest.raises(WeightsMismatchError, match="cover models"):
        agent.set_weights({"model": weights["model"]})


def test_save_restore_round_trip(agent: TinyAgent, tiny_model_cls: type, tmp_path: Path) -> None:
    path = tmp_path / "ckpt" / "agent.pdparams"
    agent.save(path)
    fresh = TinyAgent(TinyAlgorithm(tiny_model_cls()))
    fresh.restore(path)
    np.testing.assert_array_equal(fresh.predict(OBS), agent.predict(OBS))
    assert [p.name for p in path.parent.iterdir()] == ["agent.pdparams"]


def test_save_and_restore_a_single_model_like_parl(
    agent: TinyAgent, tiny_model_cls: type, tmp_path: Path
) -> None:
    path = tmp_path / "model.pdparams"
    agent.save(path, model=agent.alg.model)
    assert set(paddle.load(str(path))) == set(agent.alg.model.state_dict())
    fresh = TinyAgent(TinyAlgorithm(tiny_model_cls()))
    fresh.restore(path)
    np.testing.assert_array_equal(fresh.predict(OBS), agent.predict(OBS))


def test_restore_missing_file(agent: TinyAgent, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint file"):
        agent.restore(tmp_path / "nope.pdparams")


def test_restore_truncated_file_leaves_model_unchanged(agent: TinyAgent, tmp_path: Path) -> None:
    path = tmp_path / "agent.pdparams"
    agent.save(path)
    path.write_bytes(path.read_bytes()[:50])
    before = agent.predict(OBS)
    with pytest.raises(CheckpointError, match="could not read"):
        agent.restore(path)
    np.testing.assert_array_equal(agent.predict(OBS), before)


def test_restore_mismatched_file_names_parameter(
    agent: TinyAgent, tiny_model_cls: type, tmp_path: Path
) -> None:
    path = tmp_path / "other.pdparams"
    TinyAgent(TinyAlgorithm(tiny_model_cls(obs_dim=5))).save(path)
    before = agent.predict(OBS)
    with pytest.raises(CheckpointError, match=r"fc1.weight.*\(5, 8\).*\(3, 8\)"):
        agent.restore(path)
    np.testing.assert_array_equal(agent.predict(OBS), before)


KILLED_SAVE = """
import os, signal, sys
import numpy as np, paddle, parl
class Model(parl.Model):
    def __init__(self):
        super().__init__()
        self.fc = paddle.nn.Linear(3, 2)
    def forward(self, x):
        return self.fc(x)
class Alg(parl.Algorithm):
    pass
paddle.seed(0)
agent = parl.Agent(Alg(Model()))
agent.save({path!r})
print(agent.get_weights()["model"]["fc.weight"].sum(), flush=True)
agent.alg.model.set_weights({{k: v + 1 for k, v in agent.get_weights()["model"].items()}})
def half_then_die(obj, path, *args, **kwargs):
    with open(path, "wb") as handle:
        handle.write(b"partial checkpoint bytes")
        handle.flush()
    os.kill(os.getpid(), signal.SIGKILL)
paddle.save = half_then_die
agent.save({path!r})
"""


def test_process_killed_mid_save_keeps_previous_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "agent.pdparams"
    code = KILLED_SAVE.format(path=str(path))
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    saved_sum = float(result.stdout.strip().splitlines()[-1])
    state = paddle.load(str(path))
    assert np.isclose(np.asarray(state["model"]["fc.weight"]).sum(), saved_sum)


def test_save_inference_model_matches_forward(agent: TinyAgent, tmp_path: Path) -> None:
    prefix = tmp_path / "inference" / "model"
    agent.save_inference_model(prefix, [[None, 3]], ["float32"])
    loaded = paddle.jit.load(str(prefix))
    loaded.eval()
    np.testing.assert_allclose(
        loaded(paddle.to_tensor(OBS)).numpy(), agent.predict(OBS), rtol=1e-5, atol=1e-6
    )


def test_save_inference_model_checks_its_inputs(agent: TinyAgent, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one shape and one dtype"):
        agent.save_inference_model(tmp_path / "m", [[None, 3]], ["float32", "int64"])


def test_train_and_eval_switch_every_model(agent: TinyAgent) -> None:
    agent.eval()
    assert not agent.training
    assert not agent.alg.model.training and not agent.alg.target_model.training
    agent.train()
    assert agent.training and agent.alg.target_model.training


def test_agent_needs_an_algorithm() -> None:
    with pytest.raises(TypeError, match="parl.Algorithm"):
        parl.Agent(object())  # type: ignore[arg-type]


def test_after_save_hook_sees_the_finished_file(agent: TinyAgent, tmp_path: Path) -> None:
    seen: list[tuple[int, Path]] = []

    class Observer:
        @hookimpl
        def parl_after_save(self, agent, path):
            seen.append((os.path.getsize(path), path))

    manager = get_plugin_manager()
    plugin = Observer()
    manager.register(plugin)
    try:
        agent.save(tmp_path / "a.pdparams")
    finally:
        manager.unregister(plugin)
    assert len(seen) == 1 and seen[0][1] == tmp_path / "a.pdparams" and seen[0][0] > 0
