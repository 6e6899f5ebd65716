"""Training checkpoints: a resumed run equals an uninterrupted one; bad files change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import parl
from parl.core.checkpoint import VERSION
from parl.core.config import AlgorithmConfig
from parl.core.errors import CheckpointError
from parl.core.target import make_target, update_target
from parl.core.tensor_files import METADATA_KEY, read_tensor_file, write_tensor_file
from parl.testing import training_state

import numpy as np
import paddle
import pytest
import safetensors.numpy

OPTIMIZERS = {
    "adam": lambda params: paddle.optimizer.Adam(0.01, parameters=params),
    "adam-multi-tensor": lambda params: paddle.optimizer.Adam(
        0.01, parameters=params, use_multi_tensor=True
    ),
    "momentum": lambda params: paddle.optimizer.Momentum(0.01, momentum=0.9, parameters=params),
    "rmsprop-with-schedule": lambda params: paddle.optimizer.RMSProp(
        paddle.optimizer.lr.StepDecay(0.01, step_size=2, gamma=0.5), parameters=params
    ),
}


class SacLikeConfig(AlgorithmConfig):
    optimizer: str = "adam"
    """Which entry of OPTIMIZERS the critic uses."""


class SacLike(parl.Algorithm):
    """SAC-like test algorithm: a critic and its target, a learnable log-alpha, a counter.

    It declares its extra state as a later family would: ``checkpoint_state``.
    """

    Config = SacLikeConfig
    checkpoint_state = ("log_alpha", "total_it", "last_loss")

    def __init__(self, model: parl.Model, **options) -> None:
        super().__init__(model, **options)
        self.target_model = make_target(model)
        self.optimizer = OPTIMIZERS[self.config.optimizer](model.parameters())
        self.log_alpha = paddle.create_parameter([1], "float32")
        self.log_alpha.set_value(np.zeros(1, np.float32))
        self.alpha_optimizer = paddle.optimizer.Adam(0.05, parameters=[self.log_alpha])
        self.total_it = 0
        self.last_loss = 0.0

    def learn(self, obs: paddle.Tensor) -> None:
        noise = paddle.randn(obs.shape)  # paddle's global generator, restored on resume
        loss = (self.model(obs + noise) - self.target_model(obs)).square().mean()
        loss = loss + self.log_alpha.exp().sum() * loss.detach()
        self.optimizer.clear_grad()
        self.alpha_optimizer.clear_grad()
        loss.backward()
        self.optimizer.step()
        self.alpha_optimizer.step()
        if isinstance(self.optimizer._learning_rate, paddle.optimizer.lr.LRScheduler):
            self.optimizer._learning_rate.step()
        self.total_it += 1
        self.last_loss = float(loss)
        if self.total_it % 3 == 0:
            update_target(self.model, self.target_model, decay=0.5)


class BatchNormModel(parl.Model):
    def __init__(self) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(3, 4)
        self.bn = paddle.nn.BatchNorm1D(4)

    def forward(self, obs):
        return self.bn(self.fc(obs))


class ExploringAgent(parl.Agent):
    checkpoint_state = ("rng", "episodes")

    def __init__(self, algorithm: parl.Algorithm, seed: int) -> None:
        super().__init__(algorithm)
        self.rng = np.random.default_rng(seed)
        self.episodes = 0

    def learn(self) -> None:
        obs = self.rng.normal(size=(8, 3)) + np.random.normal(size=(8, 3))  # both generators
        self.alg.learn(paddle.to_tensor(obs.astype(np.float32)))
        self.episodes += 1


def make_agent(seed: int, optimizer: str = "adam") -> ExploringAgent:
    paddle.seed(seed)
    return ExploringAgent(SacLike(BatchNormModel(), optimizer=optimizer), seed)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_resumed_run_equals_uninterrupted_run(optimizer: str, tmp_path: Path) -> None:
    agent = make_agent(0, optimizer)
    for _ in range(4):
        agent.learn()
    agent.save_checkpoint(tmp_path / "run.ckpt")
    for _ in range(5):
        agent.learn()
    uninterrupted = training_state(agent)

    resumed = make_agent(1, optimizer)
    resumed.learn()  # state of its own that the checkpoint must replace
    resumed.load_checkpoint(tmp_path / "run.ckpt")
    assert (resumed.alg.total_it, resumed.episodes) == (4, 4)
    for _ in range(5):
        resumed.learn()
    state = training_state(resumed)
    assert sorted(state) == sorted(uninterrupted)
    assert any(key.startswith("optimizers/alpha_optimizer/algorithm/log_alpha/") for key in state)
    for key, value in uninterrupted.items():
        np.testing.assert_array_equal(state[key], value, err_msg=key)
    assert resumed.alg.last_loss == agent.alg.last_loss
    assert resumed.alg.optimizer.get_lr() == agent.alg.optimizer.get_lr()


def test_checkpoint_file_is_versioned_safetensors(tmp_path: Path) -> None:
    agent = make_agent(0)
    agent.save_checkpoint(tmp_path / "run.ckpt")
    loaded = read_tensor_file(tmp_path / "run.ckpt")
    assert (loaded.metadata["format"], loaded.metadata["version"]) == ("parl.checkpoint", VERSION)
    assert loaded.metadata["algorithm"]["class"] == "SacLike"
    assert "models/target_model/bn._mean" in loaded.tensors


def test_restore_takes_the_model_from_a_checkpoint(tmp_path: Path) -> None:
    agent = make_agent(0)
    agent.learn()
    agent.save_checkpoint(tmp_path / "run.ckpt")
    other = make_agent(1)
    other.restore(tmp_path / "run.ckpt")
    for name, value in agent.get_weights().items():
        np.testing.assert_array_equal(other.get_weights()[name], value)


def _rewrite(path: Path, edit) -> None:
    """Rewrite a checkpoint with ``edit(arrays, metadata)`` applied."""
    loaded = read_tensor_file(path)
    arrays, metadata = dict(loaded.tensors), json.loads(json.dumps(loaded.metadata))
    edit(arrays, metadata)
    write_tensor_file(path, arrays, metadata)


def _set(metadata: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        metadata = metadata[key]
    metadata[last] = value


CORRUPTIONS = {
    "newer format": (lambda a, m: _set(m, "version", VERSION + 1), "newer than"),
    "another algorithm": (lambda a, m: _set(m, "algorithm.class", "DQN"), "DQN algorithm"),
    "a missing model": (
        lambda a, m: [a.pop(k) for k in list(a) if k.startswith("models/target_model/")],
        r"holds models \['model'\]",
    ),
    "an unknown array": (lambda a, m: a.update(extra=np.zeros(1)), "does not know"),
    "a wrong optimizer slot shape": (
        lambda a, m: a.update({"optimizers/optimizer/models/model/fc.weight/moment1": np.zeros(2)}),
        r"fc.weight/moment1.*shape \(2,\)",
    ),
    "an undeclared counter": (lambda a, m: _set(m, "agent.state.steps", {}), "declares"),
    "a counter of the wrong type": (
        lambda a, m: _set(m, "algorithm.state.total_it", {"kind": "int", "value": "7"}),
        "'7' is not a int",
    ),
    "a broken generator state": (
        lambda a, m: _set(m, "agent.state.rng.state.state", {"nope": 1}),
        "generator state is invalid",
    ),
    "no random states": (lambda a, m: a.pop("rng/numpy"), "random states"),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_bad_checkpoint_is_refused_and_changes_nothing(corruption: str, tmp_path: Path) -> None:
    edit, match = CORRUPTIONS[corruption]
    path = tmp_path / "run.ckpt"
    source = make_agent(0)
    source.learn()
    source.save_checkpoint(path)
    _rewrite(path, edit)
    agent = make_agent(1)
    agent.learn()
    before = training_state(agent)
    counters = (agent.alg.total_it, agent.episodes, agent.rng.bit_generator.state)
    with pytest.raises(CheckpointError, match=match):
        agent.load_checkpoint(path)
    for key, value in training_state(agent).items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)
    assert (agent.alg.total_it, agent.episodes, agent.rng.bit_generator.state) == counters


def test_complex_array_of_the_right_shape_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    make_agent(0).save_checkpoint(path)
    loaded = read_tensor_file(path)
    arrays = dict(loaded.tensors)
    arrays["models/model/fc.bias"] = arrays["models/model/fc.bias"].astype(np.complex64)
    header = {METADATA_KEY: json.dumps(loaded.metadata)}
    path.write_bytes(safetensors.numpy.save(arrays, metadata=header))
    agent = make_agent(1)
    before = agent.get_weights()
    with pytest.raises(CheckpointError, match="complex64 values"):
        agent.load_checkpoint(path)
    np.testing.assert_array_equal(agent.get_weights()["fc.weight"], before["fc.weight"])


def test_weights_file_is_not_a_checkpoint(tmp_path: Path) -> None:
    agent = make_agent(0)
    agent.save(tmp_path / "weights.pdparams")
    with pytest.raises(CheckpointError, match="Agent.restore"):
        agent.load_checkpoint(tmp_path / "weights.pdparams")


def test_undeclarable_state_is_refused_at_save_and_writes_nothing(tmp_path: Path) -> None:
    agent = make_agent(0)
    agent.alg.total_it = [1, 2]  # type: ignore[assignment]
    with pytest.raises(CheckpointError, match=r"SacLike.total_it is a list"):
        agent.save_checkpoint(tmp_path / "run.ckpt")
    assert list(tmp_path.iterdir()) == []


def test_optimizer_over_an_undeclared_parameter_is_refused(tmp_path: Path) -> None:
    agent = make_agent(0)
    agent.alg.hidden = paddle.create_parameter([2], "float32")
    agent.alg.hidden_optimizer = paddle.optimizer.SGD(0.1, parameters=[agent.alg.hidden])
    with pytest.raises(CheckpointError, match="hidden_optimizer.*checkpoint_state"):
        agent.save_checkpoint(tmp_path / "run.ckpt")
