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
from parl.core.tensor_files import file_format, read_tensor_file
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


def test_weights_are_the_flat_weights_of_alg_model_like_parl(
    agent: TinyAgent, tiny_model_cls: type
) -> None:
    weights = agent.get_weights()
    assert sorted(weights) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert all(isinstance(value, np.ndarray) for value in weights.values())
    other = TinyAgent(TinyAlgorithm(tiny_model_cls()))
    target_before = other.alg.target_model.get_weights()
    other.set_weights(weights)  # PARL: target.set_weights(learner.get_weights())
    np.testing.assert_array_equal(other.predict(OBS), agent.predict(OBS))
    other.alg.model.set_weights(agent.alg.get_weights())
    for name, value in other.alg.target_model.get_weights().items():
        np.testing.assert_array_equal(value, target_before[name])
    assert dict(agent.alg.named_models()).keys() == {"model", "target_model"}


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (np.full((8,), "0.5"), r"'fc2.bias'.*<U3 values.*numbers"),
        (np.array([object()] * 8), r"'fc2.bias'.*object values"),
        (np.zeros(7, dtype=np.float32), r"'fc2.bias'.*\(7,\), expected \(2,\)"),
    ],
)
def test_set_weights_checks_everything_before_writing(agent: TinyAgent, bad, match) -> None:
    weights = agent.get_weights()
    broken = {name: value + 1 for name, value in weights.items()}
    broken["fc2.bias"] = bad
    with pytest.raises(WeightsMismatchError, match=match):
        agent.set_weights(broken)
    for name, value in agent.get_weights().items():
        np.testing.assert_array_equal(value, weights[name])


def test_algorithm_without_model_says_where_its_models_are() -> None:
    class MultiModel(parl.Algorithm):
        pass

    with pytest.raises(AttributeError, match="named_models"):
        MultiModel().get_weights()


def test_save_restore_round_trip_of_alg_model(
    agent: TinyAgent, tiny_model_cls: type, tmp_path: Path
) -> None:
    path = tmp_path / "ckpt" / "agent.pdparams"
    agent.save(path)
    assert file_format(path) == "safetensors" and oct(path.stat().st_mode & 0o777) == "0o600"
    fresh = TinyAgent(TinyAlgorithm(tiny_model_cls()))
    target_before = fresh.alg.target_model.get_weights()
    fresh.restore(path)
    np.testing.assert_array_equal(fresh.predict(OBS), agent.predict(OBS))
    for name, value in fresh.alg.target_model.get_weights().items():
        np.testing.assert_array_equal(value, target_before[name])
    assert [p.name for p in path.parent.iterdir()] == ["agent.pdparams"]


def test_save_and_restore_another_model_like_parl(
    agent: TinyAgent, tiny_model_cls: type, tmp_path: Path
) -> None:
    path = tmp_path / "target.pdparams"
    agent.alg.target_model.set_weights({k: v * 2 for k, v in agent.get_weights().items()})
    agent.save(path, model=agent.alg.target_model)
    fresh = TinyAgent(TinyAlgorithm(tiny_model_cls()))
    fresh.restore(path, model=fresh.alg.target_model)
    for name, value in fresh.alg.target_model.get_weights().items():
        np.testing.assert_array_equal(value, 2 * agent.get_weights()[name])


def test_restore_missing_file(agent: TinyAgent, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no weights or checkpoint file"):
        agent.restore(tmp_path / "nope.pdparams")


def test_restore_truncated_file_leaves_model_unchanged(agent: TinyAgent, tmp_path: Path) -> None:
    path = tmp_path / "agent.pdparams"
    agent.save(path)
    path.write_bytes(path.read_bytes()[:50])
    before = agent.predict(OBS)
    with pytest.raises(CheckpointError, match="truncated"):
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
import os, signal
import paddle, parl
import parl.core.files as files
import parl.core.tensor_files as tensor_files
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
print(agent.get_weights()["fc.weight"].sum(), flush=True)
agent.set_weights({{k: v + 1 for k, v in agent.get_weights().items()}})
def half_then_die(path, data, mode=files.OWNER_ONLY):
    with files.atomic_write(path, mode) as handle:
        handle.write(data[: len(data) // 2])
        handle.flush()
        os.kill(os.getpid(), signal.SIGKILL)
tensor_files.write_atomic = half_then_die
agent.save({path!r})
"""


def test_process_killed_mid_save_keeps_previous_file_and_next_save_cleans_up(
    agent: TinyAgent, tmp_path: Path
) -> None:
    path = tmp_path / "agent.pdparams"
    code = KILLED_SAVE.format(path=str(path))
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    saved_sum = float(result.stdout.strip().splitlines()[-1])
    orphans = [p for p in tmp_path.iterdir() if p.name != path.name]
    assert len(orphans) == 1, "the killed writer left no temporary file: the test proves nothing"
    weights = read_tensor_file(path).tensors
    assert np.isclose(weights["fc.weight"].sum(), saved_sum)
    agent.save(tmp_path / "other.pdparams")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.pdparams", "other.pdparams"]


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
    seen: list[tuple[int, Path, str]] = []

    class Observer:
        @hookimpl
        def parl_after_save(self, agent, path, kind):
            seen.append((os.path.getsize(path), path, kind))

    manager = get_plugin_manager()
    plugin = Observer()
    manager.register(plugin)
    try:
        agent.save(tmp_path / "a.pdparams")
        agent.save_checkpoint(tmp_path / "a.ckpt")
    finally:
        manager.unregister(plugin)
    assert [(path.name, kind) for _, path, kind in seen] == [
        ("a.pdparams", "weights"),
        ("a.ckpt", "checkpoint"),
    ]
    assert all(size > 0 for size, _, _ in seen)


def test_failing_after_save_hook_does_not_fail_the_save(
    agent: TinyAgent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        @hookimpl
        def parl_after_save(self, agent, path):
            raise RuntimeError("upload service down")

    manager = get_plugin_manager()
    plugin = Broken()
    manager.register(plugin)
    try:
        agent.save(tmp_path / "a.pdparams")
    finally:
        manager.unregister(plugin)
    assert "upload service down" in caplog.text and "weights saved to" in caplog.text
    fresh_weights = read_tensor_file(tmp_path / "a.pdparams").tensors
    np.testing.assert_array_equal(fresh_weights["fc1.weight"], agent.get_weights()["fc1.weight"])
