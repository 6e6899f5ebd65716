"""Files written by the previous version (paddle-only ES) load into the classes written once.

``fixtures/`` holds an ES and a CMA-ES agent's training checkpoint and solver file, written by
the commit before the policies became framework-neutral (8673b88) after two generations, with
the solution's flat parameters and its actions on five observations. Both load on paddle. A
CMA-ES solver file carries the solution (the mean, a flat vector in the portable layout), so
it also loads into a torch policy, which then acts the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import parl
from parl.testing import LinearModel

import gymnasium as gym
import numpy as np
import pytest

from parl_algos_es import CMAES, ES, ESAgent

FIXTURES = Path(__file__).parent / "fixtures"
SAVED = json.loads((FIXTURES / "es-expected.json").read_text())
ALGORITHMS = {
    "es": (ES, {"noise_table_size": 10_000, "population_size": 8}),
    "cmaes": (CMAES, {"sigma0": 0.5}),
}


def _agent(name: str, backend: str) -> ESAgent:
    pytest.importorskip(backend)
    cls, options = ALGORITHMS[name]
    parl.set_seed(3, backend=backend)
    algorithm = cls(LinearModel(4, 4, backend=backend), seed=3, **options)
    return ESAgent(
        algorithm, gym.spaces.Discrete(4), observation_shape=(4,), normalize_observations=True
    )


def _check(agent: ESAgent, name: str) -> None:
    expected = SAVED["expected"][name]
    np.testing.assert_allclose(agent.alg.flat.get(), expected["parameters"], rtol=1e-6)
    obs = np.asarray(SAVED["obs"], dtype=np.float32)
    np.testing.assert_array_equal(agent.predict(obs), expected["actions"])


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_a_checkpoint_of_the_previous_version_loads(name) -> None:
    agent = _agent(name, "paddle")
    agent.load_checkpoint(FIXTURES / f"{name}-paddle.ckpt")
    _check(agent, name)


@pytest.mark.parametrize("backend", ["paddle", pytest.param("torch", marks=pytest.mark.torch)])
def test_a_cmaes_solver_file_of_the_previous_version_loads_on_either_framework(backend) -> None:
    agent = _agent("cmaes", backend)
    assert not np.allclose(agent.alg.flat.get(), SAVED["expected"]["cmaes"]["parameters"])
    agent.load_solver(FIXTURES / "cmaes-paddle.solver")
    _check(agent, "cmaes")
