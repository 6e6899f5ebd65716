"""Checkpoints written by the family's previous code (commit 08684be: paddle classes and a torch
twin of SAC) in the classes written once (``fixtures/make_legacy_checkpoints.py`` wrote them).

The paddle ones load, predict what they predicted and train on as the saved run did. The torch
twin's agent kept no exploration generator, which the one ``ContinuousAgent`` checkpoints and
declares added since (``checkpoint_state_added``): that checkpoint loads and predicts as
before, and the generator keeps its new seed.
"""

from __future__ import annotations

from pathlib import Path

import parl
from parl.core.errors import CheckpointError

import numpy as np
import pytest

import parl_algos_ac as ac

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OBS, ACT, HIDDEN = 3, 2, (8,)
CONTINUOUS = {
    "DDPG": (ac.DeterministicActorCritic, 1, {}),
    "TD3": (ac.DeterministicActorCritic, 2, {"policy_freq": 1}),
    "SAC": (ac.GaussianActorCritic, 2, {"alpha": "auto"}),
    "OAC": (ac.GaussianActorCritic, 2, {"alpha": 0.1}),
    "CQL": (ac.GaussianActorCritic, 2, {"num_random": 2, "with_lagrange": True}),
    "IQL": (ac.GaussianActorCriticValue, 2, {}),
}
CASES = [(name, "paddle") for name in [*CONTINUOUS, "A2C"]]


def _batch(seed: int, size: int = 16) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(size, OBS)).astype(np.float32)
    action = rng.uniform(-1, 1, (size, ACT)).astype(np.float32)
    reward, terminal = rng.normal(size=size).astype(np.float32), rng.random(size) < 0.2
    return obs, action, reward, rng.normal(size=(size, OBS)).astype(np.float32), terminal


def _a2c_batch(seed: int, size: int = 16) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(size, OBS)).astype(np.float32)
    return obs, rng.integers(0, 3, size), rng.normal(size=size), rng.normal(size=size)


def _agent(name: str, backend: str):
    parl.set_seed(1, backend=backend)  # not the saved run's seed: the checkpoint must set it all
    if name == "A2C":
        return ac.A2CAgent(ac.A2C(ac.DiscreteActorCritic(OBS, 3, HIDDEN, backend=backend)))
    network, critics, options = CONTINUOUS[name]
    model = network(OBS, ACT, HIDDEN, num_critics=critics, backend=backend)
    algorithm = parl.algorithms.get(name, backend=backend)(model, **options)
    return ac.ContinuousAgent(algorithm, seed=5)


@pytest.mark.parametrize(("name", "backend"), CASES)
def test_a_checkpoint_of_the_previous_code_loads_predicts_and_trains_on(name, backend) -> None:
    key, expected = f"{name}-{backend}", np.load(FIXTURES / "legacy_expected.npz")
    agent = _agent(name, backend)
    agent.load_checkpoint(FIXTURES / f"legacy-{key}.ckpt")
    probe = expected["probe"]
    predicted = agent.value(probe) if name == "A2C" else agent.predict(probe)
    np.testing.assert_allclose(predicted, expected[f"{key}/predict"], rtol=1e-6, atol=1e-7)

    if name == "A2C":
        agent.learn(*_a2c_batch(3), 1e-2, -0.01)
    else:
        agent.learn(*_batch(3))
    for path, model in agent.alg.named_models():
        for weight, value in model.get_weights().items():
            saved = expected[f"{key}/after/{path}/{weight}"]
            np.testing.assert_allclose(value, saved, rtol=1e-5, atol=1e-6, err_msg=weight)


@pytest.mark.torch
def test_the_torch_twins_checkpoint_loads_and_keeps_the_agents_new_generator() -> None:
    """The torch twin's agent saved no exploration generator (the agent written once declares
    it added since): its checkpoint loads whole, predicts what it did, and the generator stays
    as the new agent seeded it."""
    pytest.importorskip("torch")
    expected = np.load(FIXTURES / "legacy_expected.npz")
    agent = _agent("SAC", "torch")
    generator = agent.rng.bit_generator.state
    agent.load_checkpoint(FIXTURES / "legacy-SAC-torch.ckpt")
    predicted = agent.predict(expected["probe"])
    np.testing.assert_allclose(predicted, expected["SAC-torch/predict"], rtol=1e-6, atol=1e-7)
    assert agent.rng.bit_generator.state == generator


@pytest.mark.torch
def test_an_attribute_not_declared_added_may_not_be_missing(monkeypatch) -> None:
    """Without the declaration the same file is refused whole, and nothing is applied."""
    pytest.importorskip("torch")
    expected = np.load(FIXTURES / "legacy_expected.npz")
    agent = _agent("SAC", "torch")
    monkeypatch.setattr(type(agent), "checkpoint_state_added", ())
    before = agent.predict(expected["probe"])
    with pytest.raises(CheckpointError, match=r"declares checkpoint_state \['rng'\]"):
        agent.load_checkpoint(FIXTURES / "legacy-SAC-torch.ckpt")
    np.testing.assert_array_equal(agent.predict(expected["probe"]), before)
