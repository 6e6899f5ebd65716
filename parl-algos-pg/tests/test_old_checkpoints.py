"""Files written by the previous version (08684be: a paddle and a torch twin of every class) load
into the classes written once, and predict and learn as they did.

``fixtures/`` holds, per algorithm and framework the old version ran on, the weights file
(``Agent.save``), the training checkpoint (``Agent.save_checkpoint``: weights, Adam's slots,
the agent's generator) and ``*.npz`` with a probe batch, the old code's predictions on it, and
its predictions after one more full-batch learn step from the checkpoint (so that the optimizer
slots are checked too). ``fixtures/write_old_checkpoints.py.txt`` is the script that wrote
them, run at 08684be.
"""

from __future__ import annotations

from pathlib import Path

import parl
from parl.core.neutral import Agent, Model

import numpy as np
import pytest

from parl_algos_pg import PPO, ContinuousPPOModel, DiscretePPOModel, PolicyGradient, PPOAgent

FIXTURES = Path(__file__).parent / "fixtures"
PPO_CASES = [
    pytest.param(
        kind, backend, id=f"{kind}-{backend}", marks=[pytest.mark.torch] * (backend == "torch")
    )
    for kind in ("discrete", "continuous")
    for backend in ("paddle", "torch")
]


def _ppo_batch(obs_dim: int, continuous: bool, n: int = 16) -> tuple[np.ndarray, ...]:
    """The old script's batch (same generator, same draws)."""
    rng = np.random.default_rng(3)
    obs = rng.normal(size=(n, obs_dim)).astype(np.float32)
    if continuous:
        action = rng.uniform(-1, 1, size=(n, 1)).astype(np.float32)
    else:
        action = rng.integers(0, 2, size=n)
    value, returns = rng.normal(size=(2, n)).astype(np.float32)
    logp = rng.normal(-1.0, 0.3, size=n).astype(np.float32)
    return obs, action, value, returns, logp, returns - value


def _ppo_agent(kind: str, backend: str) -> PPOAgent:
    parl.set_seed(1, backend=backend)  # other weights than the file's: loading must change them
    continuous = kind == "continuous"
    if continuous:
        model = ContinuousPPOModel(3, 1, 16, backend=backend)
    else:
        model = DiscretePPOModel(4, 2, 16, backend=backend)
    return PPOAgent(PPO(model, continuous_action=continuous, initial_lr=0.01), seed=5)


@pytest.mark.parametrize(("kind", "backend"), PPO_CASES)
def test_ppo_weights_of_the_previous_version_predict_as_before(kind: str, backend: str) -> None:
    pytest.importorskip(backend)
    expected = np.load(FIXTURES / f"ppo_{kind}_{backend}.npz")
    agent = _ppo_agent(kind, backend)
    assert not np.array_equal(agent.value(expected["probe"]), expected["value"])
    agent.restore(FIXTURES / f"ppo_{kind}_{backend}.safetensors")
    np.testing.assert_array_equal(agent.predict(expected["probe"]), expected["predict"])
    np.testing.assert_array_equal(agent.value(expected["probe"]), expected["value"])


@pytest.mark.parametrize(("kind", "backend"), PPO_CASES)
def test_ppo_checkpoints_of_the_previous_version_resume_as_before(kind: str, backend: str) -> None:
    pytest.importorskip(backend)
    expected = np.load(FIXTURES / f"ppo_{kind}_{backend}.npz")
    agent = _ppo_agent(kind, backend)
    agent.load_checkpoint(FIXTURES / f"ppo_{kind}_{backend}.ckpt")
    np.testing.assert_array_equal(agent.predict(expected["probe"]), expected["predict"])
    agent.learn(*_ppo_batch(expected["probe"].shape[1], kind == "continuous"), 1, 1, None)
    probe = expected["probe"]
    np.testing.assert_allclose(agent.predict(probe), expected["predict_after_learn"], atol=1e-6)
    np.testing.assert_allclose(agent.value(probe), expected["value_after_learn"], atol=1e-6)


class ProbsMLP(Model):
    """The old script's paddle model (the same layer names)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 16, *, backend=None) -> None:
        super().__init__()
        self.fc1 = self.nn.Linear(obs_dim, hidden)
        self.fc2 = self.nn.Linear(hidden, act_dim)

    def forward(self, obs):
        return self.ops.softmax(self.fc2(self.fc1(obs).tanh()))


class PGAgent(Agent):
    """The old script's agent class name (a checkpoint names its agent's class)."""

    def predict(self, obs):
        return self.to_numpy(self.alg.predict(self.to_tensor(obs)))

    def learn(self, obs, action, reward):
        return float(self.alg.learn(obs, action, reward))


def test_policy_gradient_files_of_the_previous_version_load_and_resume() -> None:
    expected = np.load(FIXTURES / "policy_gradient_paddle.npz")
    probe = expected["probe"]
    parl.set_seed(1, backend="paddle")
    weights = PGAgent(PolicyGradient(ProbsMLP(4, 2, backend="paddle"), lr=0.01))
    weights.restore(FIXTURES / "policy_gradient_paddle.safetensors")
    np.testing.assert_array_equal(weights.predict(probe), expected["predict"])
    agent = PGAgent(PolicyGradient(ProbsMLP(4, 2, backend="paddle"), lr=0.01))
    agent.load_checkpoint(FIXTURES / "policy_gradient_paddle.ckpt")
    np.testing.assert_array_equal(agent.predict(probe), expected["predict"])
    rng = np.random.default_rng(4)
    batch = rng.normal(size=(12, 4)).astype(np.float32), rng.integers(0, 2, 12), rng.normal(size=12)
    agent.learn(batch[0], batch[1], batch[2].astype(np.float32))
    np.testing.assert_allclose(agent.predict(probe), expected["predict_after_learn"], atol=1e-6)
