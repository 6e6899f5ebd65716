"""PolicyGradient (REINFORCE) on both frameworks: loss math, PARL-style acting, the contract
suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import parl
from parl.core.errors import ModelContractError
from parl.core.neutral import Agent, Model
from parl.testing import AlgorithmContract, BadInput, IdentityEnv
from parl.utils import RunResult

import gymnasium as gym
import numpy as np
import pydantic
import pytest

from parl_algos_pg import PolicyGradient, PolicyGradientConfig

REPO = Path(__file__).resolve().parents[2]
BACKENDS = [
    pytest.param("paddle", id="paddle"),
    pytest.param("torch", id="torch", marks=pytest.mark.torch),
]


class ProbsMLP(Model):
    """One hidden layer, softmax output: PARL's PolicyGradient model contract."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 16, *, backend=None) -> None:
        super().__init__()
        self.fc1 = self.nn.Linear(obs_dim, hidden)
        self.fc2 = self.nn.Linear(hidden, act_dim)

    def forward(self, obs):
        return self.ops.softmax(self.fc2(self.fc1(obs).tanh()))


class LinearLogits(Model):
    """``logits = obs @ W + b``: the loss is easy to write in numpy."""

    def __init__(self, obs_dim: int, act_dim: int, *, backend=None) -> None:
        super().__init__()
        self.fc = self.nn.Linear(obs_dim, act_dim)

    def forward(self, obs):
        return self.fc(obs)


class LinearProbs(LinearLogits):
    def forward(self, obs):
        return self.ops.softmax(self.fc(obs))


class NumpyAgent(Agent):
    """Minimal agent: numpy in and out, one observation or a batch."""

    def sample(self, obs):
        return self.to_numpy(self.alg.sample(self.to_tensor(obs)))

    def predict(self, obs):
        return self.to_numpy(self.alg.predict(self.to_tensor(obs))).argmax(-1)

    def learn(self, obs, action, reward):
        return float(self.alg.learn(obs, action, reward))


def _paddle_layout(model) -> dict[str, np.ndarray]:
    if model.backend_name == "paddle":
        return model.get_weights()
    from parl.core.torch.interop import to_paddle_weights

    return to_paddle_weights(model)


def _set_paddle_layout(model, weights) -> None:
    if model.backend_name == "torch":
        from parl.core.torch.interop import from_paddle_weights

        weights = from_paddle_weights(model, weights)
    model.set_weights(weights)


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _known_weights(model: Model) -> tuple[np.ndarray, np.ndarray]:
    w = np.array([[0.5, -0.3], [0.1, 0.2], [-0.4, 0.6]], dtype=np.float32)
    b = np.array([0.05, -0.05], dtype=np.float32)
    _set_paddle_layout(model, {"fc.weight": w, "fc.bias": b})
    return w, b


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("output", ["probs", "logits"])
def test_loss_and_adam_step_match_numpy(output, backend):
    model = (LinearProbs if output == "probs" else LinearLogits)(3, 2, backend=backend)
    w, b = _known_weights(model)
    lr = 0.01
    alg = PolicyGradient(model, lr=lr, model_output=output)
    obs = np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0], [0.0, 1.0, 1.0]], dtype=np.float32)
    action = np.array([0, 1, 1], dtype=np.int64)
    ret = np.array([1.5, -0.5, 2.0], dtype=np.float32)

    probs = _softmax(obs @ w + b)
    onehot = np.eye(2)[action]
    expected_loss = np.mean(-np.log((probs * onehot).sum(-1)) * ret)
    # d loss / d logits = (probs - onehot) * ret / B, then back through the linear layer.
    dlogits = (probs - onehot) * ret[:, None] / len(ret)
    grad_w, grad_b = obs.T @ dlogits, dlogits.sum(0)

    ops = alg.ops
    loss = alg.learn(ops.to_tensor(obs), ops.to_tensor(action, "int64"), ops.to_tensor(ret))
    assert float(loss) == pytest.approx(expected_loss, rel=1e-5)
    # Adam's first step moves every weight by lr * sign(gradient).
    new = _paddle_layout(model)
    np.testing.assert_allclose(new["fc.weight"], w - lr * np.sign(grad_w), atol=1e-5)
    np.testing.assert_allclose(new["fc.bias"], b - lr * np.sign(grad_b), atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_unbatched_observation_goes_to_the_model_as_it_is(backend):
    # PARL's QuickStart agent passes a 1-D observation to PolicyGradient.predict.
    alg = PolicyGradient(ProbsMLP(4, 3, backend=backend))
    obs = np.random.default_rng(0).normal(size=4).astype(np.float32)
    probs = alg.ops.to_numpy(alg.predict(alg.ops.to_tensor(obs)))
    assert probs.shape == (3,) and probs.sum() == pytest.approx(1.0, rel=1e-5)
    np.testing.assert_allclose(probs, alg.ops.to_numpy(alg.predict(obs[None]))[0], rtol=1e-6)
    action = alg.sample(obs)
    assert list(action.shape) == [] and 0 <= int(action) < 3


def _identity_rollouts(agent: NumpyAgent, seed: int, updates: int) -> None:
    """``updates`` REINFORCE steps on 8 identity envs; each step is a one-step bandit."""
    n = 4
    envs = gym.vector.SyncVectorEnv([lambda: IdentityEnv(n, episode_length=10)] * 8)
    obs, _ = envs.reset(seed=seed)
    for _ in range(updates):
        action = agent.sample(obs)
        next_obs, reward, _, _, _ = envs.step(action)
        agent.learn(obs, action, (reward - reward.mean()).astype(np.float32))
        obs = next_obs
    envs.close()


class TestPolicyGradientContract(AlgorithmContract):
    algorithm_name = "PolicyGradient"
    backends = ("paddle", "torch")
    solved_score = 0.95
    train_steps = 60
    short_train_steps = 10

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        model = LinearProbs(4, 4, backend=self.backend)
        return NumpyAgent(self.algorithm_class(model, **{"lr": 0.05, **config}))

    def train(self, agent, env, steps, seed):
        _identity_rollouts(agent, seed, steps)

    def learn_batch(self, agent, rng):
        obs = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 12)]
        return agent.learn(obs, rng.integers(0, 4, 12), rng.normal(size=12).astype(np.float32))

    def bad_inputs(self, agent):
        obs, ret = np.zeros((3, 4), dtype=np.float32), np.zeros(3, dtype=np.float32)
        yield from (
            BadInput(
                "too few actions",
                lambda: agent.learn(obs, np.zeros(2, dtype=np.int64), ret),
                ValueError,
                r"shape \[3\] or \[3, 1\]",
            ),
            BadInput(
                "rewards of the wrong shape",
                lambda: agent.learn(obs, np.zeros(3, dtype=np.int64), np.zeros((3, 2))),
                ValueError,
                "reward must have shape",
            ),
            BadInput(
                "float actions",
                lambda: agent.learn(obs, np.zeros(3, dtype=np.float32), ret),
                TypeError,
                "must be integers",
            ),
            BadInput(
                "an action out of range",
                lambda: agent.learn(obs, np.array([0, 1, 4]), ret),
                ValueError,
                r"in \[0, 4\)",
            ),
            BadInput(
                "an unbatched observation to learn",
                lambda: agent.learn(obs[0], np.zeros(1, dtype=np.int64), ret[:1]),
                ValueError,
                "add a batch axis",
            ),
            BadInput(
                "a model output name that does not exist",
                lambda: PolicyGradient(agent.alg.model, model_output="scores"),
                pydantic.ValidationError,
                "model_output",
            ),
        )


def test_config_object_and_defaults():
    alg = PolicyGradient(ProbsMLP(4, 2), config=PolicyGradientConfig(lr=0.02))
    assert alg.config.lr == 0.02
    assert PolicyGradient(ProbsMLP(4, 2)).config.lr == 1e-3
    assert PolicyGradient(ProbsMLP(4, 2), lr=None).config.lr == 1e-3  # PARL's None


def test_model_without_forward_is_refused():
    class NoForward(Model):
        def __init__(self, *, backend=None) -> None:
            super().__init__()

    with pytest.raises(ModelContractError, match="forward"):
        PolicyGradient(NoForward())


@pytest.mark.parametrize("backend", BACKENDS)
def test_registry_gives_one_class_for_both_frameworks(backend):
    assert parl.algorithms.get("PolicyGradient", backend=backend) is PolicyGradient
    assert "lr" in PolicyGradientConfig.model_fields


def test_quickstart_example_runs(tmp_path):
    script = REPO / "examples" / "QuickStart" / "train.py"
    args = ["--max-episodes", "3", "--eval-every", "50", "--quiet", "--logdir", str(tmp_path)]
    result = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "final evaluation: mean greedy return" in result.stdout
    assert (tmp_path / "model.ckpt").is_file()
    assert (tmp_path / "best_model.ckpt").is_file()
    assert "max_episodes: 3" in (tmp_path / "config.yaml").read_text()
    run = RunResult.model_validate_json((tmp_path / "result.json").read_text())
    assert run.env_id == "CartPole-v1" and run.evals and run.evals[-1][0] == run.env_steps
