"""PolicyGradient (REINFORCE): loss math, learning, checkpoints, determinism, bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import parl
from parl.core.errors import ModelContractError
from parl.testing import IdentityEnv, check_algorithm

import gymnasium as gym
import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_pg import PolicyGradient, PolicyGradientConfig

REPO = Path(__file__).resolve().parents[2]


class NumpyAgent(parl.Agent):
    """Minimal agent: batched numpy in and out."""

    def sample(self, obs):
        return self.alg.sample(paddle.to_tensor(obs)).numpy()

    def predict(self, obs):
        return self.alg.predict(paddle.to_tensor(obs)).numpy().argmax(-1)

    def learn(self, obs, action, reward):
        return float(self.alg.learn(obs, action, reward))


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _known_weights(model: parl.Model) -> tuple[np.ndarray, np.ndarray]:
    w = np.array([[0.5, -0.3], [0.1, 0.2], [-0.4, 0.6]], dtype=np.float32)
    b = np.array([0.05, -0.05], dtype=np.float32)
    model.set_weights({"fc.weight": w, "fc.bias": b})
    return w, b


@pytest.mark.parametrize("output", ["probs", "logits"])
def test_loss_and_adam_step_match_numpy(models, output):
    model = models.LinearProbs(3, 2) if output == "probs" else models.LinearLogits(3, 2)
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

    loss = alg.learn(paddle.to_tensor(obs), paddle.to_tensor(action), paddle.to_tensor(ret))
    assert float(loss) == pytest.approx(expected_loss, rel=1e-5)
    # Adam's first step moves every weight by lr * sign(gradient).
    new = model.get_weights()
    np.testing.assert_allclose(new["fc.weight"], w - lr * np.sign(grad_w), atol=1e-5)
    np.testing.assert_allclose(new["fc.bias"], b - lr * np.sign(grad_b), atol=1e-5)


def test_predict_and_sample_smoke(models):
    alg = PolicyGradient(models.ProbsMLP(4, 3))
    obs = paddle.randn([5, 4])
    probs = alg.predict(obs).numpy()
    assert probs.shape == (5, 3)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)
    actions = alg.sample(obs).numpy()
    assert actions.shape == (5,) and actions.dtype == np.int64
    assert ((actions >= 0) & (actions < 3)).all()
    loss = alg.learn(obs, actions[:, None], np.ones((5, 1), dtype=np.float32))
    assert np.isfinite(float(loss))


def _train_identity(models, seed: int, updates: int = 60) -> tuple[NumpyAgent, float, float]:
    parl.set_seed(seed)
    n = 4
    envs = gym.vector.SyncVectorEnv([lambda: IdentityEnv(n, episode_length=10)] * 8)
    agent = NumpyAgent(PolicyGradient(models.LinearProbs(n, n), lr=0.05))
    obs, _ = envs.reset(seed=seed)

    def greedy_reward() -> float:
        eye = np.eye(n, dtype=np.float32)
        return float((agent.predict(eye) == np.arange(n)).mean())

    before = greedy_reward()
    for _ in range(updates):
        action = agent.sample(obs)
        next_obs, reward, _, _, _ = envs.step(action)
        # Each step is a one-step bandit, so the return credited to it is its own reward.
        agent.learn(obs, action, (reward - reward.mean()).astype(np.float32))
        obs = next_obs
    envs.close()
    return agent, before, greedy_reward()


def test_learns_identity_env(models):
    _, before, after = _train_identity(models, seed=0)
    assert before < 0.5, f"the untrained policy is already accurate ({before})"
    assert after == 1.0, f"greedy accuracy {after} after training (was {before})"


def test_same_seed_same_weights(models):
    first, _, _ = _train_identity(models, seed=3, updates=10)
    second, _, _ = _train_identity(models, seed=3, updates=10)
    w1, w2 = first.get_weights(), second.get_weights()
    for name in w1["model"]:
        np.testing.assert_array_equal(w1["model"][name], w2["model"][name])


def test_save_restore_gives_equal_predictions(tmp_path, models):
    agent = NumpyAgent(PolicyGradient(models.ProbsMLP(4, 2)))
    obs = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    agent.learn(obs, np.array([0, 1, 0, 1, 1, 0]), np.linspace(-1, 1, 6).astype(np.float32))
    agent.save(tmp_path / "pg.ckpt")
    other = NumpyAgent(PolicyGradient(models.ProbsMLP(4, 2)))
    other.restore(tmp_path / "pg.ckpt")
    np.testing.assert_array_equal(
        agent.alg.predict(paddle.to_tensor(obs)).numpy(),
        other.alg.predict(paddle.to_tensor(obs)).numpy(),
    )


@pytest.mark.parametrize(
    ("options", "field"),
    [({"gama": 0.9}, "gama"), ({"lr": -1.0}, "lr"), ({"model_output": "scores"}, "model_output")],
)
def test_bad_config_names_the_field(models, options, field):
    with pytest.raises(pydantic.ValidationError, match=field):
        PolicyGradient(models.ProbsMLP(4, 2), **options)


def test_config_object_and_defaults(models):
    alg = PolicyGradient(models.ProbsMLP(4, 2), config=PolicyGradientConfig(lr=0.02))
    assert alg.config.lr == 0.02
    assert PolicyGradient(models.ProbsMLP(4, 2)).config.lr == 1e-3


def test_bad_inputs_are_clear_errors(models):
    alg = PolicyGradient(models.ProbsMLP(4, 2))
    obs = np.zeros((3, 4), dtype=np.float32)
    with pytest.raises(ValueError, match=r"shape \[3\] or \[3, 1\]"):
        alg.learn(obs, np.zeros(2, dtype=np.int64), np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="reward must have shape"):
        alg.learn(obs, np.zeros(3, dtype=np.int64), np.zeros((3, 2), dtype=np.float32))
    with pytest.raises(TypeError, match="must be integers"):
        alg.learn(obs, np.zeros(3, dtype=np.float32), np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match=r"in \[0, 2\)"):
        alg.learn(obs, np.array([0, 1, 2]), np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="add a batch axis"):
        alg.predict(np.zeros(4, dtype=np.float32))


def test_model_without_forward_is_refused():
    class NoForward(parl.Model):
        pass

    with pytest.raises(ModelContractError, match="forward"):
        PolicyGradient(NoForward())


def test_conformance(models):
    check_algorithm(PolicyGradient, lambda: PolicyGradient(models.ProbsMLP(4, 2)))


def test_registry_lookup():
    assert parl.algorithms.get("PolicyGradient") is PolicyGradient
    assert "lr" in PolicyGradientConfig.model_fields


def test_quickstart_example_runs(tmp_path):
    script = REPO / "examples" / "QuickStart" / "train.py"
    args = ["--max-episodes", "3", "--eval-every", "2", "--quiet", "--logdir", str(tmp_path)]
    result = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "final evaluation: mean return" in result.stdout
    assert (tmp_path / "model.ckpt").is_file()
