"""The torch backend's Model, Algorithm and Agent: PARL 2.x's semantics, checked like paddle's."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import parl
from parl.core.config import AlgorithmConfig
from parl.core.errors import CheckpointError, WeightsMismatchError
from parl.core.tensor_files import read_tensor_file, write_tensor_file
from parl.testing import AlgorithmContract, BadInput, registered_algorithm

import numpy as np
import pytest
from pydantic import PositiveFloat

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parl.core.torch import Agent, Algorithm, Model  # noqa: E402
from parl.core.torch.batch import as_batch_actions, to_tensor  # noqa: E402
from parl.core.torch.interop import from_paddle_weights, to_paddle_weights  # noqa: E402
from parl.core.torch.target import make_target, update_target  # noqa: E402


class OneHot(Model):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, obs):
        return self.fc(obs)


class Normed(OneHot):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, obs):
        return self.norm(self.fc(obs))


class RegressionConfig(AlgorithmConfig):
    lr: PositiveFloat = 0.3
    """Learning rate of the Adam optimizer."""


class Regression(Algorithm):
    """Regression: fits the model's outputs to targets, a stand-in family for the torch kit.

    ``scale`` is a learnable scalar outside the model (as SAC's temperature), trained by the
    same optimizer towards 1, so that checkpoints must carry it and its optimizer slots.
    """

    Config = RegressionConfig
    checkpoint_state = ("scale", "calls")

    def __init__(self, model: Model, **options) -> None:
        super().__init__(model, **options)
        lr = self.config.lr
        self.scale = torch.nn.Parameter(torch.zeros(()))
        self.calls = 0
        params = [*model.parameters(), self.scale]
        self.optimizer = torch.optim.Adam(params, lr=lr, betas=(0.8, 0.9))

    def predict(self, obs):
        return self.model(obs)

    def learn(self, obs, target):
        self.calls += 1
        loss = (self.predict(obs) - target).square().mean() + (self.scale - 1).square()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss


class RegressionAgent(Agent):
    def predict(self, obs):
        with torch.no_grad():
            return self.to_numpy(self.alg.predict(self.to_tensor(obs))).argmax(-1)

    def sample(self, obs):
        return self.predict(obs)

    def learn(self, obs, target):
        if np.ndim(obs) != 2:
            raise ValueError(f"RegressionAgent.learn needs obs [B, 4], got {np.shape(obs)}")
        return float(self.alg.learn(self.to_tensor(obs), self.to_tensor(target)).detach())


class TestRegressionOnTorch(AlgorithmContract):
    """The whole contract suite on a tiny torch family: checkpoints, resume, bad input."""

    algorithm_class = Regression
    train_steps = 60
    short_train_steps = 5
    solved_score = 0.95

    def make_agent(self, seed: int, **config) -> Agent:
        parl.set_seed(seed, backend="torch")
        return RegressionAgent(Regression(OneHot(), **config))

    def learn_batch(self, agent, rng):
        obs = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 16)]
        return agent.learn(obs, obs)

    def bad_inputs(self, agent):
        yield BadInput(
            "cuda on a machine without a GPU",
            lambda: RegressionAgent(
                agent.alg, device="cuda" if not torch.cuda.is_available() else "cuda:99"
            ),
            ValueError,
            "GPU",
        )


# -- Model --------------------------------------------------------------------------------------


def test_weights_are_a_flat_dict_of_numpy_arrays_checked_before_writing() -> None:
    model = Normed()
    weights = model.get_weights()
    assert sorted(weights) == sorted(model.state_dict())
    assert all(isinstance(v, np.ndarray) for v in weights.values())
    assert (
        weights["fc.weight"].shape == (4, 4)
        and weights["norm.num_batches_tracked"].dtype == np.int64
    )
    changed = {k: v + 1 for k, v in weights.items()}
    with pytest.raises(WeightsMismatchError, match=r"shape \(4,\), expected \(4, 4\)"):
        model.set_weights({**changed, "fc.weight": np.zeros(4)})
    with pytest.raises(WeightsMismatchError, match="missing"):
        model.set_weights({k: v for k, v in changed.items() if k != "fc.bias"})
    assert all(np.array_equal(model.get_weights()[k], v) for k, v in weights.items())
    model.set_weights({**changed, "fc.bias": torch.ones(4, dtype=torch.float64)})
    np.testing.assert_array_equal(model.get_weights()["fc.weight"], weights["fc.weight"] + 1)
    assert model.fc.bias.dtype == torch.float32


def test_deepcopy_is_independent_and_sync_blends_parameters_and_buffers() -> None:
    model = Normed()
    model(torch.randn(8, 4))  # moves BatchNorm's running statistics
    target = copy.deepcopy(model)
    target.set_weights({k: v * 0 for k, v in model.get_weights().items()})
    assert not np.array_equal(model.get_weights()["fc.weight"], target.get_weights()["fc.weight"])
    model.sync_weights_to(target, decay=0.75)
    expected = {k: 0.25 * v for k, v in model.get_weights().items()}
    for name, value in target.get_weights().items():
        if name == "norm.num_batches_tracked":
            assert value == model.get_weights()[name]  # counters are copied
        else:
            np.testing.assert_allclose(value, expected[name], rtol=1e-6, atol=1e-7)
    model.sync_weights_to(target)
    assert all(np.array_equal(v, model.get_weights()[k]) for k, v in target.get_weights().items())
    with pytest.raises(ValueError, match=r"decay must be in \[0, 1\]"):
        model.sync_weights_to(target, decay=1.5)
    with pytest.raises(TypeError, match="parl.core.torch.Model"):
        model.sync_weights_to(torch.nn.Linear(4, 4))


def test_make_target_takes_no_gradients() -> None:
    model = OneHot()
    target = make_target(model)
    assert not any(p.requires_grad for p in target.parameters())
    update_target(model, target, 0.5)
    with pytest.raises(ValueError, match="separate target"):
        update_target(model, model)


def test_algorithm_and_agent_refuse_the_other_backend() -> None:
    paddle_model = pytest.importorskip("parl.testing.models").LinearModel(4, 4)
    with pytest.raises(TypeError, match="needs a parl.Model of the torch backend"):
        Regression(paddle_model)
    from parl.testing.contract import AlgorithmContract as _  # noqa: F401

    with pytest.raises(TypeError, match="needs a parl.Algorithm of the torch backend"):
        Agent(object())  # type: ignore[arg-type]


def test_cuda_without_a_gpu_is_a_clear_error_and_moves_nothing() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: this test is of the error without one")
    algorithm = Regression(OneHot())
    with pytest.raises(ValueError, match=r"needs a GPU.*torch\.cuda\.is_available\(\) is False"):
        RegressionAgent(algorithm, device="cuda")
    with pytest.raises(ValueError, match="not a torch device"):
        RegressionAgent(algorithm, device="gpu0")
    assert algorithm.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in algorithm.model.parameters())


class MoveRecorded(Regression):
    """Regression that records the devices it is moved to (the agent must move it, not skip it)."""

    def __init__(self, model: Model, **options) -> None:
        super().__init__(model, **options)
        self.moves: list[torch.device] = []

    def to(self, device):
        self.moves.append(device)
        return super().to(device)


class PARLStyleAgent(RegressionAgent):
    """An agent written as PARL 2.x's torch ones are: ``self.device = ...`` in ``__init__``."""

    def __init__(self, algorithm: Algorithm, device, before: bool = False) -> None:
        if before:
            self.device = device
        super().__init__(algorithm)
        if not before:
            self.device = device


@pytest.mark.parametrize("before", [False, True], ids=["after-super-init", "before-super-init"])
def test_a_parl_style_agent_sets_its_device_and_moves_the_algorithm(before: bool) -> None:
    algorithm = MoveRecorded(OneHot())
    agent = PARLStyleAgent(algorithm, torch.device("cpu"), before=before)
    assert algorithm.moves == [torch.device("cpu")]
    assert agent.device == algorithm.device == torch.device("cpu")
    assert agent.predict(np.eye(4, dtype=np.float32)).shape == (4,)
    agent.device = "cpu"
    assert algorithm.moves == [torch.device("cpu")] * 2


def test_reading_the_device_before_the_algorithm_is_a_clear_error() -> None:
    class Early(RegressionAgent):
        def __init__(self, algorithm: Algorithm) -> None:
            self.where = self.device
            super().__init__(algorithm)

    with pytest.raises(AttributeError, match=r"no algorithm yet: call super\(\).__init__"):
        Early(Regression(OneHot()))


def test_setting_cuda_without_a_gpu_is_a_clear_error_and_moves_nothing() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: this test is of the error without one")
    agent = RegressionAgent(Regression(OneHot()))
    with pytest.raises(ValueError, match=r"needs a GPU.*torch\.cuda\.is_available\(\) is False"):
        agent.device = torch.device("cuda")
    with pytest.raises(ValueError, match=r"needs a GPU"):
        PARLStyleAgent(Regression(OneHot()), "cuda", before=True)
    assert agent.device == agent.alg.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in agent.alg.model.parameters())


def test_torch_models_are_parl_2_model_base_instances() -> None:
    from parl.core.algorithm_base import AlgorithmBase
    from parl.core.model_base import ModelBase

    class Pair(AlgorithmBase):
        def __init__(self) -> None:
            self.nets = {"policy": OneHot(), "value": OneHot()}

    assert isinstance(OneHot(), ModelBase)
    weights = Pair().get_weights()
    assert sorted(weights["nets"]) == ["policy", "value"]
    assert sorted(weights["nets"]["policy"]) == ["fc.bias", "fc.weight"]


def test_the_agent_converts_numpy_in_one_place() -> None:
    agent = RegressionAgent(Regression(OneHot()), device="cpu")
    tensor = agent.to_tensor(np.arange(4, dtype=np.int64))
    assert tensor.dtype == torch.float32 and tensor.device == agent.device
    assert agent.to_numpy(tensor.requires_grad_()).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="discrete actions must be integers"):
        as_batch_actions(np.zeros(3), 3, "here")
    assert to_tensor([1, 2], "int64").dtype == torch.int64


# -- files --------------------------------------------------------------------------------------


@pytest.fixture
def trained() -> Iterator[RegressionAgent]:
    parl.set_seed(0, backend="torch")
    agent = RegressionAgent(Regression(OneHot()))
    rng = np.random.default_rng(0)
    for _ in range(3):
        obs = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 8)]
        agent.learn(obs, obs)
    yield agent


def test_checkpoint_holds_optimizer_slots_by_name_and_the_backend(trained, tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    trained.save_checkpoint(path)
    assert path.stat().st_mode & 0o777 == 0o600
    loaded = read_tensor_file(path)
    assert loaded.metadata["backend"] == "torch" and "torch" in loaded.metadata["rng"]
    slots = {k for k in loaded.tensors if k.startswith("optimizers/")}
    assert "optimizers/optimizer/models/model/fc.weight/exp_avg" in slots
    assert "optimizers/optimizer/algorithm/scale/exp_avg_sq" in slots
    groups = loaded.metadata["algorithm"]["optimizers"]["optimizer"]["param_groups"]
    assert groups[0]["betas"] == [0.8, 0.9] and groups[0]["lr"] == 0.3


def _rewrite(path: Path, change) -> None:
    loaded = read_tensor_file(path)
    tensors, metadata = dict(loaded.tensors), json.loads(json.dumps(loaded.metadata))
    change(tensors, metadata)
    write_tensor_file(path, tensors, metadata)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda t, m: t.update({"rng/torch": t["rng/torch"][:100]}), "torch refuses"),
        (
            lambda t, m: t.__setitem__("rng/torch", _bad_mt_position(t["rng/torch"])),
            "Invalid mt19937 state",
        ),
        (
            lambda t, m: t.__setitem__("rng/torch", _zero_mt_words(t["rng/torch"])),
            "all-zero Mersenne Twister state",
        ),
        (
            lambda t, m: t.__setitem__(
                "optimizers/optimizer/models/model/fc.weight/exp_avg", np.zeros((4, 5), "f4")
            ),
            "slot",
        ),
        (
            lambda t, m: m["algorithm"]["optimizers"]["optimizer"]["param_groups"][0].update(
                lr="fast"
            ),
            "lr is 'fast'",
        ),
        (lambda t, m: m.update(backend="paddle"), "written on the paddle backend"),
        (
            lambda t, m: (
                t.pop("optimizers/optimizer/algorithm/scale/exp_avg")
                and t.__setitem__("optimizers/optimizer/models/ghost/exp_avg", np.zeros(4, "f4"))
            ),
            "does not update",
        ),
    ],
)
def test_a_bad_checkpoint_changes_nothing(trained, tmp_path: Path, change, match) -> None:
    path = tmp_path / "run.ckpt"
    trained.save_checkpoint(path)
    _rewrite(path, change)
    before = {k: v.copy() for k, v in trained.get_weights().items()}
    state = torch.get_rng_state().clone()
    slots = copy.deepcopy(trained.alg.optimizer.state_dict())
    with pytest.raises(CheckpointError, match=match):
        trained.load_checkpoint(path)
    assert all(np.array_equal(trained.get_weights()[k], v) for k, v in before.items())
    assert torch.equal(torch.get_rng_state(), state)
    after = trained.alg.optimizer.state_dict()
    assert all(
        torch.equal(after["state"][i][k], v)
        for i, s in slots["state"].items()
        for k, v in s.items()
    )


def _zero_mt_words(state: np.ndarray) -> np.ndarray:
    """A CPU state whose 624 Mersenne Twister words (bytes 24 on) are zero: torch takes it and
    then draws only zeros."""
    dead = state.copy()
    dead[24 : 24 + 8 * 624] = 0
    return dead


def _bad_mt_position(state: np.ndarray) -> np.ndarray:
    bad = state.copy()
    bad[8:12] = 255  # the Mersenne Twister's `left`, far past its 624 words
    return bad


def test_restore_refuses_a_paddle_file_and_reads_a_torch_save_only_with_opt_in(
    trained, tmp_path: Path
) -> None:
    paddle_file = tmp_path / "paddle.safetensors"
    metadata = {"format": "parl.weights", "backend": "paddle"}
    write_tensor_file(paddle_file, trained.get_weights(), metadata)
    with pytest.raises(CheckpointError, match="written on the paddle backend"):
        trained.restore(paddle_file)
    unnamed = tmp_path / "unnamed.safetensors"  # a torch file with its backend field deleted
    write_tensor_file(unnamed, trained.get_weights(), {"format": "parl.weights"})
    with pytest.raises(CheckpointError, match="does not say which framework wrote it"):
        trained.restore(unnamed)
    trained.restore(unnamed, file_backend="torch")
    legacy = tmp_path / "parl2.pt"
    torch.save(trained.alg.model.state_dict(), legacy)
    other = RegressionAgent(Regression(OneHot()))
    with pytest.raises(CheckpointError, match="allow_pickle=True"):
        other.restore(legacy)
    other.restore(legacy, allow_pickle=True)
    assert all(np.array_equal(other.get_weights()[k], v) for k, v in trained.get_weights().items())
    evil = tmp_path / "evil.pt"
    torch.save({"fc.weight": Path("/")}, evil)
    with pytest.raises(CheckpointError, match="refused"):
        other.restore(evil, allow_pickle=True)


# -- the registry and the two backends side by side ---------------------------------------------


def test_the_registry_keeps_one_name_per_backend() -> None:
    from parl.testing.models import LinearModel  # a paddle model: paddle is here too

    class PaddleRegression(parl.core.paddle.Algorithm):
        """PaddleRegression: a stand-in."""

    with registered_algorithm("Toy", Regression), registered_algorithm("Toy", PaddleRegression):
        assert parl.algorithms.get("Toy", backend="torch") is Regression
        assert parl.algorithms.get("Toy", backend="paddle") is PaddleRegression
        from parl.algorithms.torch import Toy

        assert Toy is Regression
    with registered_algorithm("TorchOnly", Regression):
        with pytest.raises(LookupError, match="installed for torch only") as error:
            parl.algorithms.get("TorchOnly", backend="paddle")
        assert "backend='torch'" in str(error.value) and "PARL_BACKEND=torch" in str(error.value)
    assert LinearModel  # paddle and torch live in one process


def test_interop_transposes_exactly_the_linear_weights() -> None:
    model = OneHot()
    paddle_layout = to_paddle_weights(model)
    np.testing.assert_array_equal(paddle_layout["fc.weight"], model.fc.weight.detach().numpy().T)
    back = from_paddle_weights(model, paddle_layout)
    assert all(np.array_equal(back[k], v) for k, v in model.get_weights().items())
