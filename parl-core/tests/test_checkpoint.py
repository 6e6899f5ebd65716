"""Training checkpoints: a resumed run equals an uninterrupted one; bad files change nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import parl
from parl.core.checkpoint import VERSION, capture
from parl.core.config import AlgorithmConfig
from parl.core.errors import CheckpointError
from parl.core.paddle.target import make_target, update_target
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

    def __init__(self, algorithm: parl.Algorithm, seed: int, bit_generator: type) -> None:
        super().__init__(algorithm)
        self.rng = np.random.Generator(bit_generator(seed))
        self.episodes = 0

    def learn(self) -> None:
        obs = self.rng.normal(size=(8, 3)) + np.random.normal(size=(8, 3))  # both generators
        self.alg.learn(paddle.to_tensor(obs.astype(np.float32)))
        self.episodes += 1


def make_agent(
    seed: int, optimizer: str = "adam", bit_generator: type = np.random.PCG64
) -> ExploringAgent:
    paddle.seed(seed)
    return ExploringAgent(SacLike(BatchNormModel(), optimizer=optimizer), seed, bit_generator)


def snapshot(agent: parl.Agent) -> tuple[dict[str, np.ndarray], str]:
    """Everything a checkpoint would hold: weights, optimizer slots and learning rates,
    declared counters and generators, and the process's paddle, numpy and Python RNGs."""
    arrays, metadata = capture(agent)
    return arrays, json.dumps(metadata, sort_keys=True)


def assert_unchanged(agent: parl.Agent, before: tuple[dict[str, np.ndarray], str]) -> None:
    arrays, metadata = snapshot(agent)
    assert sorted(arrays) == sorted(before[0])
    for key, value in arrays.items():
        np.testing.assert_array_equal(value, before[0][key], err_msg=key)
    assert metadata == before[1]


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


@pytest.mark.parametrize(
    "bit_generator",
    [np.random.MT19937, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64],
    ids=lambda cls: cls.__name__,
)
def test_every_numpy_bit_generator_resumes(bit_generator: type, tmp_path: Path) -> None:
    agent = make_agent(0, bit_generator=bit_generator)
    agent.rng.random(3)
    agent.rng.integers(0, 2**32, dtype=np.uint32)  # a buffered half word for the 64-bit ones
    agent.save_checkpoint(tmp_path / "run.ckpt")
    expected = agent.rng.random(5)
    resumed = make_agent(1, bit_generator=bit_generator)
    resumed.load_checkpoint(tmp_path / "run.ckpt")
    np.testing.assert_array_equal(resumed.rng.random(5), expected)


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
    "a float counter given as a bool": (
        lambda a, m: _set(m, "algorithm.state.last_loss", {"kind": "float", "value": True}),
        "True is not a float",
    ),
    "no random states": (lambda a, m: a.pop("rng/numpy"), "random states"),
    "a random state missing": (lambda a, m: m["rng"].pop("python"), r"are \['numpy', 'paddle'\]"),
}


def _python_word(index: int, value) -> Callable:
    return lambda a, m: m["rng"]["python"][1].__setitem__(index, value)


def _paddle_field(index: int, value) -> Callable:
    return lambda a, m: m["rng"]["paddle"][0].__setitem__(index, value)


def _paddle_engine_position(value: int) -> Callable:
    def edit(arrays: dict, metadata: dict) -> None:
        words = metadata["rng"]["paddle"][0][3].split()
        metadata["rng"]["paddle"][0][3] = " ".join([*words[:-1], str(value)])

    return edit


# Files whose weights, optimizer slots and counters all fit, but one random state does not
# (positions that would read out of bounds are tried in a child process, further down).
RNG_CORRUPTIONS = {
    "numpy position a float": (
        lambda a, m: _set(m, "rng.numpy.state.pos", 3.0),
        "state.pos is a float, not an integer",
    ),
    "numpy key of another dtype": (
        lambda a, m: a.update({"rng/numpy": a["rng/numpy"].astype(np.int64)}),
        r"state.key is a int64 array of shape \(624,\), not uint32",
    ),
    "numpy key too short": (
        lambda a, m: a.update({"rng/numpy": a["rng/numpy"][:600]}),
        r"shape \(600,\), not uint32 of shape \(624,\)",
    ),
    "numpy state with an extra field": (
        lambda a, m: _set(m, "rng.numpy.state.extra", 1),
        r"has fields \['extra', 'key', 'pos'\], expected \['key', 'pos'\]",
    ),
    "numpy has_gauss out of range": (
        lambda a, m: _set(m, "rng.numpy.has_gauss", 2),
        r"has_gauss is 2, outside \[0, 1\]",
    ),
    "numpy gauss a string": (
        lambda a, m: _set(m, "rng.numpy.gauss", "0.5"),
        "gauss is a str, not a float",
    ),
    "numpy state of another bit generator": (
        lambda a, m: _set(m, "rng.numpy.bit_generator", "PCG64"),
        "is a 'PCG64' state, not a MT19937 state",
    ),
    "python position past the key": (
        _python_word(-1, 10**8),
        r"Python random state's position is 100000000, outside \[0, 624\]",
    ),
    "python word wider than 32 bits": (
        _python_word(0, 2**40),
        r"Python random state\[0\] is 1099511627776, outside",
    ),
    "python word a string": (_python_word(5, "7"), r"state\[5\] is a str, not an integer"),
    "python state too short": (
        lambda a, m: m["rng"]["python"][1].pop(),
        "does not hold 625 integers",
    ),
    "python version": (lambda a, m: m["rng"]["python"].__setitem__(0, 2), "has version 2"),
    "python gauss a list": (
        lambda a, m: m["rng"]["python"].__setitem__(2, [1.0]),
        "gauss is a list, not a float",
    ),
    "paddle engine not numbers": (
        _paddle_field(3, "hello world"),
        "engine is not 313 decimal integers",
    ),
    "paddle engine position past its words": (
        _paddle_engine_position(10**8),
        r"engine's position is 100000000, outside \[0, 312\]",
    ),
    "paddle seed negative": (_paddle_field(1, -1), "seed is -1, outside"),
    "paddle state too short": (
        lambda a, m: m["rng"]["paddle"][0].pop(),
        r"is not \[device, seed, offset, engine\]",
    ),
    "agent generator with a field missing": (
        lambda a, m: _set(m, "agent.state.rng.state.state", {"state": 1}),
        r"ExploringAgent.rng's generator state.state has fields \['state'\], expected",
    ),
    "agent generator increment too wide": (
        lambda a, m: _set(m, "agent.state.rng.state.state.inc", 2**128),
        "state.state.inc is 340282366920938463463374607431768211456, outside",
    ),
    "agent generator flag a bool": (
        lambda a, m: _set(m, "agent.state.rng.state.has_uint32", True),
        "has_uint32 is a bool, not an integer",
    ),
    "agent generator of another kind": (
        lambda a, m: _set(m, "agent.state.rng.state.bit_generator", "SFC64"),
        "is a 'SFC64' state, not a PCG64 state",
    ),
    # Well-formed but dead states: each outputs only zeros, and a rejection sampler (normal,
    # integers) on it spins in C for ever.
    "numpy key all zeros": (
        lambda a, m: a.update({"rng/numpy": np.zeros(624, np.uint32)}),
        "all-zero Mersenne Twister state",
    ),
    "numpy key zero but for the 31 bits the state drops": (
        lambda a, m: a.update({"rng/numpy": np.array([2**31 - 1] + [0] * 623, np.uint32)}),
        "all-zero Mersenne Twister state",
    ),
    "python words all zeros": (
        lambda a, m: m["rng"]["python"].__setitem__(1, [0] * 624 + [624]),
        "Python random state is the all-zero Mersenne Twister state",
    ),
    "paddle engine all zeros": (
        _paddle_field(3, " ".join(["0"] * 312 + ["312"])),
        "engine is the all-zero Mersenne Twister state",
    ),
    "agent PCG64 state and increment zero": (
        lambda a, m: _set(m, "agent.state.rng.state.state", {"state": 0, "inc": 0}),
        "has an even PCG increment",
    ),
}


def _assert_refused_and_unchanged(
    edit: Callable, match: str, tmp_path: Path, optimizer: str = "adam"
) -> None:
    path = tmp_path / "run.ckpt"
    source = make_agent(0, optimizer)
    source.learn()
    source.save_checkpoint(path)
    _rewrite(path, edit)
    agent = make_agent(1, optimizer)
    agent.learn()
    before = snapshot(agent)
    with pytest.raises(CheckpointError, match=match):
        agent.load_checkpoint(path)
    assert_unchanged(agent, before)


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_bad_checkpoint_is_refused_and_changes_nothing(corruption: str, tmp_path: Path) -> None:
    _assert_refused_and_unchanged(*CORRUPTIONS[corruption], tmp_path)


@pytest.mark.parametrize("corruption", sorted(RNG_CORRUPTIONS))
def test_bad_random_state_is_refused_before_anything_changes(
    corruption: str, tmp_path: Path
) -> None:
    _assert_refused_and_unchanged(*RNG_CORRUPTIONS[corruption], tmp_path)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda a, m: _set(m, "algorithm.optimizers.optimizer.lr_scheduler", {"last_epoch": 1}),
            r"holds \['last_epoch'\], expected \['last_epoch', 'last_lr'\]",
        ),
        (
            lambda a, m: _set(m, "algorithm.optimizers.optimizer.lr_scheduler.last_lr", "0.1"),
            "has last_lr = '0.1', not a number",
        ),
    ],
    ids=["a key missing", "a rate that is a string"],
)
def test_bad_scheduler_state_is_refused_and_changes_nothing(
    edit: Callable, match: str, tmp_path: Path
) -> None:
    _assert_refused_and_unchanged(edit, match, tmp_path, optimizer="rmsprop-with-schedule")


# Loads a crafted file in a child process, checks that nothing changed, and draws from every
# generator: a position that got through would end the child with SIGSEGV, which fails the
# test instead of ending pytest.
_LOAD_THEN_DRAW = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from parl.core.errors import CheckpointError
    from test_checkpoint import assert_unchanged, make_agent, snapshot
    agent = make_agent(1, bit_generator=getattr(np.random, sys.argv[3]))
    agent.learn()
    before = snapshot(agent)
    try:
        agent.load_checkpoint(sys.argv[2])
    except CheckpointError as exc:
        print("refused:", exc, flush=True)
    assert_unchanged(agent, before)
    np.random.random(10**6)
    agent.rng.random(10**6)
    agent.learn()
    print("drew", flush=True)
    """
)


@pytest.mark.parametrize(
    ("bit_generator", "field", "value", "message"),
    [
        ("PCG64", "rng.numpy.state.pos", 10**8, "pos is 100000000, outside [0, 624]"),
        ("PCG64", "rng.numpy.state.pos", -1, "pos is -1, outside [0, 624]"),
        ("MT19937", "agent.state.rng.state.state.pos", 10**8, "is 100000000, outside [0, 624]"),
        ("Philox", "agent.state.rng.state.buffer_pos", -(10**8), "is -100000000, outside [0, 4]"),
    ],
    ids=[
        "numpy's global position 10^8",
        "numpy's global position -1",
        "the agent's MT19937 position 10^8",
        "the agent's Philox buffer position -10^8",
    ],
)
def test_out_of_range_generator_position_is_refused_and_the_process_draws_on(
    bit_generator: str, field: str, value: int, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "run.ckpt"
    source = make_agent(0, bit_generator=getattr(np.random, bit_generator))
    source.learn()
    source.save_checkpoint(path)
    _rewrite(path, lambda a, m: _set(m, field, value))
    tests = str(Path(__file__).parent)
    child = subprocess.run(
        [sys.executable, "-c", _LOAD_THEN_DRAW, tests, str(path), bit_generator],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, f"the child ended with {child.returncode}: {child.stderr[-3000:]}"
    assert "refused:" in child.stdout and message in child.stdout
    assert child.stdout.rstrip().endswith("drew")


@pytest.mark.parametrize(
    "metadata",
    ["1" * 5000, "[" * 100_000 + "]" * 100_000],
    ids=["an integer of 5,000 digits", "100,000 nested lists"],
)
def test_hostile_metadata_json_is_a_checkpoint_error(metadata: str, tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    arrays = {"rng/numpy": np.zeros(624, np.uint32)}
    path.write_bytes(safetensors.numpy.save(arrays, metadata={METADATA_KEY: metadata}))
    with pytest.raises(CheckpointError, match="unreadable PARL metadata"):
        make_agent(0).load_checkpoint(path)


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
