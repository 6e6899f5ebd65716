"""Crafted solver files and checkpoints of ES, CMA-ES and GA: refused whole, before any change.

Each case is a probe that got through before: NaN or infinite arrays, finite numbers the
solver cannot run from, numbers of the wrong size, a dead generator state, observation
statistics that overflow. Every one must raise :class:`CheckpointError` (not ValueError,
OverflowError or an assertion later) and leave the agent exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import parl
from parl.core.errors import CheckpointError
from parl.core.tensor_files import read_tensor_file, write_tensor_file
from parl.testing import LinearModel

import gymnasium as gym
import numpy as np
import pytest

from parl_algos_es import CMAES, ES, GA, ESAgent


def _agent(kind: str, seed: int = 0) -> ESAgent:
    parl.set_seed(seed)
    model = LinearModel(3, 2)
    algorithm = {
        "es": lambda: ES(model, seed=seed, noise_table_size=5_000, population_size=4),
        "cmaes": lambda: CMAES(model, seed=seed, population_size=4),
        "ga": lambda: GA(model, seed=seed, population_size=4, parents=2),
    }[kind]()
    agent = ESAgent(
        algorithm, gym.spaces.Discrete(2), observation_shape=(3,), normalize_observations=True
    )
    records = [agent.add_noise() for _ in range(4)]
    agent.predict(np.random.default_rng(seed).normal(size=(6, 3)))
    agent.update(records, [0.0, 1.0, 0.5, 0.2])
    return agent


def _state(agent: ESAgent) -> tuple:
    arrays, scalars = agent.alg.solver_state()
    return (
        {k: v.copy() for k, v in arrays.items()},
        json.dumps(scalars, sort_keys=True),
        json.dumps(agent.alg.rng.bit_generator.state, sort_keys=True, default=str),
        agent.alg.flat.get().copy(),
        agent.obs_mean.copy(),
        agent.obs_var.copy(),
        agent.obs_count,
    )


def _assert_same(before: tuple, after: tuple) -> None:
    assert sorted(before[0]) == sorted(after[0])
    for key in before[0]:
        np.testing.assert_array_equal(before[0][key], after[0][key], err_msg=key)
    assert before[1:3] == after[1:3]
    for left, right in zip(before[3:6], after[3:6], strict=True):
        np.testing.assert_array_equal(left, right)
    assert before[6] == after[6]


def _array(name: str, index: tuple, value: float) -> Callable:
    def edit(tensors: dict, metadata: dict) -> None:
        array = tensors[f"solver/{name}"].copy()
        array[index] = value
        tensors[f"solver/{name}"] = array

    return edit


def _scalar(name: str, value) -> Callable:
    return lambda tensors, metadata: metadata["scalars"].__setitem__(name, value)


SOLVER_CASES = {
    "ES Adam m NaN": ("es", _array("m", (0,), np.nan), "'m' holds NaN or infinite"),
    "ES Adam v inf": ("es", _array("v", (1,), np.inf), "'v' holds NaN or infinite"),
    "ES Adam v negative": ("es", _array("v", (2,), -1.0), "second moment 'v' must be >= 0"),
    "ES steps -5": ("es", _scalar("optimizer_steps", -5), "steps must be an integer >= 0"),
    "ES steps 10**400": ("es", _scalar("optimizer_steps", 10**400), "outside int64's range"),
    "CMA-ES C NaN": ("cmaes", _array("sm.C", (0, 0), np.nan), "'sm.C' holds NaN"),
    "CMA-ES D inf": ("cmaes", _array("sm.D", (0,), np.inf), "'sm.D' holds NaN"),
    "CMA-ES mean NaN": ("cmaes", _array("mean", (0,), np.nan), "'mean' holds NaN"),
    "CMA-ES sigma -1": ("cmaes", _scalar("sigma", -1.0), "sigma must be > 0"),
    "CMA-ES sigma 1e400": ("cmaes", _scalar("sigma", 10**400), "outside float64's range"),
    "CMA-ES countiter -7": ("cmaes", _scalar("countiter", -7), "countiter must be >= 0"),
    "CMA-ES D zero": ("cmaes", _array("sm.D", (1,), 0.0), "sm.D must be > 0 and in ascending"),
    # found by `nox -s fuzz`: cma keeps its scales sorted and asserts so at the next ask()
    "CMA-ES D unsorted": ("cmaes", _array("sm.D", (0,), 1e3), "sm.D must be > 0 and in ascending"),
    "CMA-ES B not orthonormal": ("cmaes", _array("sm.B", (0, 0), 2.0), "sm.B must be orthonormal"),
    "GA population NaN": ("ga", _array("population", (1, 2), np.nan), "'population' holds NaN"),
    "GA population beyond float32": (
        "ga",
        _array("population", (0, 0), 1e300),
        "beyond float32's range",
    ),
    "GA generation -1": ("ga", _scalar("generation", -1), "generation must be >= 0"),
    "PCG64 state and increment zero": (
        "ga",
        lambda t, m: m["rng"].__setitem__("state", {"state": 0, "inc": 0}),
        "even PCG increment",
    ),
    "observation mean 1e308": (
        "es",
        lambda t, m: t.__setitem__("observations/mean", np.full(3, 1e308)),
        "within float32's range",
    ),
}


@pytest.mark.parametrize("case", sorted(SOLVER_CASES))
def test_crafted_solver_file_is_refused_whole(case: str, tmp_path: Path) -> None:
    kind, edit, match = SOLVER_CASES[case]
    path = tmp_path / "crafted.solver"
    _agent(kind, seed=0).save_solver(path)
    loaded = read_tensor_file(path)
    tensors, metadata = dict(loaded.tensors), json.loads(json.dumps(loaded.metadata))
    edit(tensors, metadata)
    write_tensor_file(path, tensors, metadata)
    agent = _agent(kind, seed=1)
    before = _state(agent)
    with pytest.raises(CheckpointError, match=match):
        agent.load_solver(path)
    _assert_same(before, _state(agent))
    agent.update([agent.add_noise() for _ in range(4)], [0.0, 1.0, 0.5, 0.2])  # and it runs on


CHECKPOINT_CASES = {
    "solver vector NaN": (
        lambda t, m: t.__setitem__(
            "algorithm/solver_vector", np.full_like(t["algorithm/solver_vector"], np.nan)
        ),
        "holds NaN or infinite",
    ),
    "optimizer steps -5": (
        lambda t, m: m["algorithm"]["state"]["solver_scalars"].__setitem__(
            "value", json.dumps({"optimizer_steps": -5})
        ),
        "optimizer steps must be an integer >= 0",
    ),
    "optimizer steps 10**400": (
        lambda t, m: m["algorithm"]["state"]["solver_scalars"].__setitem__(
            "value", '{"optimizer_steps": 1' + "0" * 400 + "}"
        ),
        "outside int64's range",
    ),
    "observation mean 1e308": (
        lambda t, m: t.__setitem__("agent/obs_mean", np.full(3, 1e308)),
        "within float32's range",
    ),
}


@pytest.mark.parametrize("case", sorted(CHECKPOINT_CASES))
def test_crafted_es_checkpoint_is_refused_whole(case: str, tmp_path: Path) -> None:
    edit, match = CHECKPOINT_CASES[case]
    path = tmp_path / "crafted.ckpt"
    _agent("es", seed=0).save_checkpoint(path)
    loaded = read_tensor_file(path)
    tensors, metadata = dict(loaded.tensors), json.loads(json.dumps(loaded.metadata))
    edit(tensors, metadata)
    write_tensor_file(path, tensors, metadata)
    agent = _agent("es", seed=1)
    before, weights = _state(agent), agent.get_weights()
    with pytest.raises(CheckpointError, match=match):
        agent.load_checkpoint(path)
    _assert_same(before, _state(agent))
    for name, value in agent.get_weights().items():
        np.testing.assert_array_equal(value, weights[name])
