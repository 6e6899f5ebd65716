"""Weights files run no code: safetensors by default, PARL 2.x pickles only when asked, safely."""

from __future__ import annotations

import collections
import pickle
from pathlib import Path

import parl
from parl.core.errors import CheckpointError
from parl.core.tensor_files import file_format, read_tensor_file, write_tensor_file

import numpy as np
import paddle
import pytest
import safetensors.numpy


class CodeOnLoad:
    """Unpickling this runs ``exec`` on its payload: what a crafted weights file does."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


@pytest.fixture
def model(tiny_model_cls: type) -> parl.Model:
    return tiny_model_cls()


@pytest.fixture
def agent(model: parl.Model) -> parl.Agent:
    class Alg(parl.Algorithm):
        pass

    return parl.Agent(Alg(model))


def test_crafted_pickle_runs_no_code_with_or_without_opt_in(
    agent: parl.Agent, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    path = tmp_path / "evil.pdparams"
    weights = {**agent.get_weights(), "fc1.bias": CodeOnLoad(marker)}
    path.write_bytes(pickle.dumps(weights, protocol=4))
    before = agent.get_weights()
    with pytest.raises(CheckpointError, match=r"is a pickle.*allow_pickle=True"):
        agent.restore(path)
    with pytest.raises(CheckpointError, match=r"names builtins\.exec.*would run code"):
        agent.restore(path, allow_pickle=True)
    assert not marker.exists()
    for name, value in agent.get_weights().items():
        np.testing.assert_array_equal(value, before[name])


def test_parl2_paddle_save_file_loads_with_opt_in(
    agent: parl.Agent, tiny_model_cls: type, tmp_path: Path
) -> None:
    path = tmp_path / "parl2.pdparams"
    source = tiny_model_cls()
    paddle.save(source.state_dict(), str(path))  # what PARL 2.x's Agent.save wrote
    assert file_format(path) == "pickle"
    agent.restore(path, allow_pickle=True)
    for name, value in source.get_weights().items():
        np.testing.assert_array_equal(agent.get_weights()[name], value)


def test_numpy1_pickle_names_load_too(agent: parl.Agent, tmp_path: Path) -> None:
    weights = {k: v + 1 for k, v in agent.get_weights().items()}
    # Protocol 2 spells globals as text lines, so numpy 1.x's module name can be written in.
    data = pickle.dumps(collections.OrderedDict(weights), protocol=2)
    path = tmp_path / "numpy1.pdparams"
    path.write_bytes(data.replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))
    assert b"numpy.core.multiarray" in path.read_bytes()
    agent.restore(path, allow_pickle=True)
    np.testing.assert_array_equal(agent.get_weights()["fc1.weight"], weights["fc1.weight"])


def test_pickled_object_array_of_the_right_shape_changes_nothing(
    agent: parl.Agent, tmp_path: Path
) -> None:
    weights = agent.get_weights()
    broken = {k: v + 1 for k, v in weights.items()}
    broken["fc2.bias"] = np.array(["a", "b"], dtype=object)
    path = tmp_path / "objects.pdparams"
    path.write_bytes(pickle.dumps(broken, protocol=4))
    with pytest.raises(CheckpointError, match="'fc2.bias'.*object values"):
        agent.restore(path, allow_pickle=True)
    np.testing.assert_array_equal(agent.get_weights()["fc1.weight"], weights["fc1.weight"])


def test_pickle_of_something_else_is_refused(agent: parl.Agent, tmp_path: Path) -> None:
    path = tmp_path / "list.pdparams"
    path.write_bytes(pickle.dumps([np.zeros(2)], protocol=4))
    with pytest.raises(CheckpointError, match="holds a list, not a state dict"):
        agent.restore(path, allow_pickle=True)


def test_foreign_safetensors_state_dict_loads_once_its_backend_is_named(
    agent: parl.Agent, tiny_model_cls: type, tmp_path: Path
) -> None:
    source = tiny_model_cls()
    path = tmp_path / "exported.safetensors"
    path.write_bytes(safetensors.numpy.save(source.get_weights()))
    with pytest.raises(CheckpointError, match="does not say which framework wrote it"):
        agent.restore(path)
    agent.restore(path, file_backend="paddle")
    np.testing.assert_array_equal(agent.get_weights()["fc2.bias"], source.get_weights()["fc2.bias"])


def _without_backend(path: Path) -> None:
    """Delete the ``backend`` field from a PARL file's metadata, keeping everything else."""
    loaded = read_tensor_file(path)
    metadata = {k: v for k, v in loaded.metadata.items() if k != "backend"}
    write_tensor_file(path, loaded.tensors, metadata)


@pytest.mark.parametrize("kind", ["weights", "checkpoint"])
def test_a_file_whose_backend_field_was_deleted_is_refused_until_named(
    agent: parl.Agent, tmp_path: Path, kind: str
) -> None:
    """A missing field counted as paddle's, so a torch file with it deleted loaded into paddle
    with every square weight transposed; now the file must say, or the caller."""
    path = tmp_path / kind
    saved = {k: v + 1 for k, v in agent.get_weights().items()}
    agent.set_weights(saved)
    (agent.save if kind == "weights" else agent.save_checkpoint)(path)
    _without_backend(path)
    load = agent.restore if kind == "weights" else agent.load_checkpoint
    agent.set_weights({k: v * 0 for k, v in saved.items()})
    with pytest.raises(CheckpointError, match=r"no 'backend' field.*file_backend='paddle'"):
        load(path)
    assert not agent.get_weights()["fc1.weight"].any()  # nothing loaded
    with pytest.raises(CheckpointError, match="written on the torch backend"):
        load(path, file_backend="torch")
    with pytest.raises(ValueError, match="file_backend must be one of"):
        load(path, file_backend="jax")
    load(path, file_backend="paddle")
    np.testing.assert_array_equal(agent.get_weights()["fc1.weight"], saved["fc1.weight"])


def test_write_refuses_non_numbers_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="'names'.*not a number type"):
        write_tensor_file(tmp_path / "w", {"names": np.array(["a"])}, {})
    assert list(tmp_path.iterdir()) == []


def test_garbage_and_bad_metadata_are_clear_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"not a weights file at all")
    with pytest.raises(CheckpointError, match="truncated or not a weights file"):
        read_tensor_file(garbage)
    listed = tmp_path / "listed"
    listed.write_bytes(safetensors.numpy.save({"a": np.zeros(1)}, metadata={"parl": "[1, 2]"}))
    with pytest.raises(CheckpointError, match="not a JSON object"):
        read_tensor_file(listed)


def test_scalars_keep_their_shape(tmp_path: Path) -> None:
    path = tmp_path / "scalars.safetensors"
    write_tensor_file(path, {"log_alpha": np.array(-1.5, np.float32)}, {})
    assert read_tensor_file(path).tensors["log_alpha"].shape == ()
