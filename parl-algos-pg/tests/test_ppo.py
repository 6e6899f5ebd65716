"""PPO: loss math, global-norm clipping, learning, checkpoints, determinism, bad input."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import parl
from parl.core.errors import ModelContractError
from parl.testing import IdentityEnv, IdentityEnvBox, check_algorithm

import gymnasium as gym
import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_pg import PPO, PPOConfig

REPO = Path(__file__).resolve().parents[2]


class LinearDiscrete(parl.Model):
    """Linear logits and a linear value: small enough to differentiate by hand."""

    def __init__(self, obs_dim: int = 3, act_dim: int = 2) -> None:
        super().__init__()
        self.pi = paddle.nn.Linear(obs_dim, act_dim)
        self.v = paddle.nn.Linear(obs_dim, 1)

    def policy(self, obs):
        return self.pi(obs)

    def value(self, obs):
        return self.v(obs)


class LinearGaussian(parl.Model):
    """Linear mean, state-independent log-std, linear value."""

    def __init__(self, obs_dim: int = 3, act_dim: int = 2) -> None:
        super().__init__()
        self.mu = paddle.nn.Linear(obs_dim, act_dim)
        self.v = paddle.nn.Linear(obs_dim, 1)
        self.log_std = self.create_parameter(
            [1, act_dim], default_initializer=paddle.nn.initializer.Constant(0.0)
        )

    def policy(self, obs):
        mean = self.mu(obs)
        return mean, paddle.exp(self.log_std).expand_as(mean)

    def value(self, obs):
        return self.v(obs).squeeze(-1)


RNG = np.random.default_rng(7)
OBS = RNG.normal(size=(5, 3)).astype(np.float32)
OLD_VALUE = RNG.normal(size=5).astype(np.float32)
RETURNS = RNG.normal(size=5).astype(np.float32)
ADV = RNG.normal(size=5).astype(np.float32)


def _set(model: parl.Model, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = {
        name: (0.5 * rng.normal(size=value.shape)).astype(np.float32)
        for name, value in model.get_weights().items()
    }
    model.set_weights(weights)
    return weights


def _numpy_losses(value, logp, entropy, old_logp, clip, clipped_value=True):
    adv = (ADV - ADV.mean()) / (ADV.std(ddof=1) + 1e-8)
    ratio = np.exp(logp - old_logp)
    action_loss = -np.minimum(ratio * adv, np.clip(ratio, 1 - clip, 1 + clip) * adv).mean()
    if clipped_value:
        v_clip = OLD_VALUE + np.clip(value - OLD_VALUE, -clip, clip)
        value_loss = 0.5 * np.maximum((value - RETURNS) ** 2, (v_clip - RETURNS) ** 2).mean()
    else:
        value_loss = 0.5 * ((value - RETURNS) ** 2).mean()
    return value_loss, action_loss, entropy.mean()


@pytest.mark.parametrize("clipped_value", [True, False])
def test_discrete_losses_match_numpy(clipped_value):
    model = LinearDiscrete()
    w = _set(model)
    alg = PPO(model, clip_param=0.2, use_clipped_value_loss=clipped_value)
    action = np.array([0, 1, 1, 0, 1])
    logits = OBS @ w["pi.weight"] + w["pi.bias"]
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    logp = log_probs[np.arange(5), action]
    entropy = -(np.exp(log_probs) * log_probs).sum(-1)
    value = (OBS @ w["v.weight"] + w["v.bias"])[:, 0]
    # Old log-probs off by up to ±0.4 so that some ratios fall outside the clip range.
    old_logp = logp + np.array([0.4, -0.4, 0.05, 0.3, -0.1], dtype=np.float32)
    expected = _numpy_losses(value, logp, entropy, old_logp, 0.2, clipped_value)
    got = alg.learn(OBS, action, OLD_VALUE, RETURNS, old_logp, ADV)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def test_continuous_losses_match_numpy():
    model = LinearGaussian()
    w = _set(model)
    alg = PPO(model, clip_param=0.1, continuous_action=True)
    action = RNG.normal(size=(5, 2)).astype(np.float32)
    mean = OBS @ w["mu.weight"] + w["mu.bias"]
    log_std = np.broadcast_to(w["log_std"], mean.shape)
    logp = (
        -0.5 * ((action - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi)
    ).sum(-1)
    entropy = (0.5 + 0.5 * np.log(2 * np.pi) + log_std).sum(-1)
    value = (OBS @ w["v.weight"] + w["v.bias"])[:, 0]
    old_logp = logp + np.array([0.3, -0.3, 0.0, 0.02, -0.2], dtype=np.float32)
    expected = _numpy_losses(value, logp, entropy, old_logp, 0.1)
    got = alg.learn(OBS, action, OLD_VALUE, RETURNS, old_logp, ADV)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def test_gradients_are_clipped_by_global_norm():
    max_norm, lr, eps = 0.05, 0.1, 1e3
    model = LinearDiscrete()
    _set(model)
    alg = PPO(model, max_grad_norm=max_norm, initial_lr=lr, eps=eps)
    action = np.array([0, 1, 1, 0, 1])
    old_logp = np.full(5, -0.7, dtype=np.float32)

    # The raw gradients, from an unclipped copy of the same loss.
    probe = PPO(copy.deepcopy(model), max_grad_norm=1e9, initial_lr=lr, eps=eps)
    tensors = probe._prepare(OBS, action, OLD_VALUE, RETURNS, old_logp, ADV, "test")
    before = model.get_weights()
    probe._step(*tensors, "test")
    grads = {name: p.grad.numpy() for name, p in probe.model.named_parameters()}
    global_norm = np.sqrt(sum((g**2).sum() for g in grads.values()))
    assert global_norm > max_norm * 2, "the test needs gradients large enough to be clipped"

    alg.learn(OBS, action, OLD_VALUE, RETURNS, old_logp, ADV)
    scale = max_norm / global_norm
    after = model.get_weights()
    for name, grad in grads.items():
        clipped = grad * scale
        # Adam's first step is lr * g / (|g| + eps) elementwise.
        expected = before[name] - lr * clipped / (np.abs(clipped) + eps)
        np.testing.assert_allclose(after[name], expected, rtol=1e-5, atol=1e-9)


def test_learn_lr_sets_the_learning_rate():
    alg = PPO(LinearDiscrete(), initial_lr=1e-3)
    assert alg.optimizer.get_lr() == pytest.approx(1e-3)
    alg.learn(OBS, np.zeros(5, dtype=np.int64), OLD_VALUE, RETURNS, np.zeros(5), ADV, lr=5e-4)
    assert alg.optimizer.get_lr() == pytest.approx(5e-4)
    with pytest.raises(ValueError, match="lr must be a positive number"):
        alg.learn(OBS, np.zeros(5, dtype=np.int64), OLD_VALUE, RETURNS, np.zeros(5), ADV, lr=-1)


@pytest.mark.parametrize("continuous", [False, True])
def test_sample_predict_value_smoke(continuous):
    alg = PPO(LinearGaussian() if continuous else LinearDiscrete(), continuous_action=continuous)
    obs = paddle.to_tensor(OBS)
    value, action, logp, entropy = alg.sample(obs)
    assert value.shape == [5] and logp.shape == [5] and entropy.shape == [5]
    assert action.shape == ([5, 2] if continuous else [5])
    greedy = alg.predict(obs)
    assert greedy.shape == ([5, 2] if continuous else [5])
    assert alg.value(obs).shape == [5]
    # The log-probs returned by sample are those learn recomputes: the first ratio is 1.
    losses = alg.learn(obs, action, value, value, logp, paddle.zeros([5]))
    assert all(np.isfinite(losses))


def _rollout_learn(alg: PPO, envs, obs, steps: int, rng) -> np.ndarray:
    """Collect ``steps`` vector steps, then run 4 epochs; gamma = 0 so A = r - V."""
    rows = []
    for _ in range(steps):
        value, action, logp, _ = alg.sample(paddle.to_tensor(obs, dtype="float32"))
        next_obs, reward, _, _, _ = envs.step(action.numpy())
        rows.append((obs, action.numpy(), value.numpy(), logp.numpy(), reward))
        obs = next_obs
    b_obs, b_act, b_val, b_logp, b_rew = (
        np.concatenate(column) for column in zip(*rows, strict=True)
    )
    b_rew = b_rew.astype(np.float32)
    alg.learn_epochs(b_obs, b_act, b_val, b_rew, b_logp, b_rew - b_val, 4, 4, rng=rng)
    return obs


def _greedy_discrete(alg: PPO, n: int) -> float:
    eye = paddle.to_tensor(np.eye(n, dtype=np.float32))
    return float((alg.predict(eye).numpy() == np.arange(n)).mean())


def _train_discrete(seed: int, iterations: int) -> PPO:
    parl.set_seed(seed)
    envs = gym.vector.SyncVectorEnv([lambda: IdentityEnv(4, episode_length=16)] * 8)
    alg = PPO(LinearDiscrete(4, 4), initial_lr=0.02, clip_param=0.2)
    obs, _ = envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(iterations):
        obs = _rollout_learn(alg, envs, obs, 16, rng)
    envs.close()
    return alg


def test_learns_identity_env_discrete():
    untrained = _greedy_discrete(PPO(LinearDiscrete(4, 4)), 4)
    alg = _train_discrete(seed=0, iterations=12)
    assert untrained < 1.0
    assert _greedy_discrete(alg, 4) == 1.0


def test_learns_identity_env_box():
    parl.set_seed(0)
    envs = gym.vector.SyncVectorEnv([lambda: IdentityEnvBox(1, episode_length=16)] * 8)
    alg = PPO(LinearGaussian(1, 1), initial_lr=0.02, clip_param=0.2, continuous_action=True)
    probe = np.linspace(-1, 1, 9, dtype=np.float32)[:, None]

    def greedy_error() -> float:
        return float(((alg.predict(paddle.to_tensor(probe)).numpy() - probe) ** 2).mean())

    before = greedy_error()
    obs, _ = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(25):
        obs = _rollout_learn(alg, envs, obs, 16, rng)
    envs.close()
    # A random policy scores about -(1/3 + 1) per step; the greedy policy must be far better.
    assert greedy_error() < 0.05 < before


def test_same_seed_same_weights():
    first = _train_discrete(seed=5, iterations=2).get_weights()
    second = _train_discrete(seed=5, iterations=2).get_weights()
    for name, value in first["model"].items():
        np.testing.assert_array_equal(value, second["model"][name])


def test_save_restore_gives_equal_predictions(tmp_path):
    class Agent(parl.Agent):
        pass

    agent = Agent(_train_discrete(seed=1, iterations=1))
    agent.save(tmp_path / "ppo.ckpt")
    other = Agent(PPO(LinearDiscrete(4, 4)))
    other.restore(tmp_path / "ppo.ckpt")
    obs = paddle.to_tensor(RNG.normal(size=(6, 4)).astype(np.float32))
    np.testing.assert_array_equal(agent.alg.value(obs).numpy(), other.alg.value(obs).numpy())
    np.testing.assert_array_equal(
        agent.alg.model.policy(obs).numpy(), other.alg.model.policy(obs).numpy()
    )


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"gama": 0.9}, "gama"),
        ({"clip_param": 0.0}, "clip_param"),
        ({"clip_param": 1.5}, "clip_param"),
        ({"initial_lr": -1.0}, "initial_lr"),
        ({"entropy_coef": -0.01}, "entropy_coef"),
        ({"max_grad_norm": 0.0}, "max_grad_norm"),
    ],
)
def test_bad_config_names_the_field(options, field):
    with pytest.raises(pydantic.ValidationError, match=field):
        PPO(LinearDiscrete(), **options)


def test_config_object():
    alg = PPO(LinearDiscrete(), config=PPOConfig(clip_param=0.3), entropy_coef=0.0)
    assert (alg.config.clip_param, alg.config.entropy_coef) == (0.3, 0.0)
    assert PPO(LinearDiscrete()).config == PPOConfig()


def test_action_kind_mismatch_is_explained():
    continuous = PPO(LinearGaussian(), continuous_action=True)
    with pytest.raises(TypeError, match="continuous_action=True"):
        continuous.learn(OBS, np.zeros(5, dtype=np.int64), OLD_VALUE, RETURNS, RETURNS, ADV)
    discrete = PPO(LinearDiscrete())
    with pytest.raises(TypeError, match="continuous_action=False"):
        discrete.learn(OBS, np.zeros((5, 2), np.float32), OLD_VALUE, RETURNS, RETURNS, ADV)
    # A Gaussian model under a discrete PPO (and the reverse) is caught at the first call.
    with pytest.raises(TypeError, match="must return logits"):
        PPO(LinearGaussian()).sample(paddle.to_tensor(OBS))
    with pytest.raises(TypeError, match=r"must return \(mean, std\)"):
        PPO(LinearDiscrete(), continuous_action=True).predict(paddle.to_tensor(OBS))


def test_wrong_shapes_are_explained():
    alg = PPO(LinearDiscrete())
    actions = np.zeros(5, dtype=np.int64)
    with pytest.raises(ValueError, match=r"batch_adv must have shape \[5\]"):
        alg.learn(OBS, actions, OLD_VALUE, RETURNS, RETURNS, ADV[:4])
    with pytest.raises(ValueError, match=r"discrete actions must have shape \[5\]"):
        alg.learn(OBS, actions[:3], OLD_VALUE, RETURNS, RETURNS, ADV)
    with pytest.raises(ValueError, match=r"in \[0, 2\)"):
        alg.learn(OBS, actions + 2, OLD_VALUE, RETURNS, RETURNS, ADV)
    with pytest.raises(ValueError, match="add a batch axis"):
        alg.sample(OBS[0])
    cont = PPO(LinearGaussian(), continuous_action=True)
    with pytest.raises(ValueError, match="3 dimensions but model.policy returns a 2"):
        cont.learn(OBS, np.zeros((5, 3), np.float32), OLD_VALUE, RETURNS, RETURNS, ADV)
    with pytest.raises(ValueError, match="does not split into 2 equal minibatches"):
        alg.learn_epochs(OBS, actions, OLD_VALUE, RETURNS, RETURNS, ADV, 1, 2)


def test_model_missing_value_is_refused():
    class PolicyOnly(parl.Model):
        def policy(self, obs):
            return obs

    with pytest.raises(ModelContractError, match="'value'"):
        PPO(PolicyOnly())


def test_conformance():
    check_algorithm(PPO, lambda: PPO(LinearDiscrete()))


def test_registry_lookup():
    assert parl.algorithms.get("PPO") is PPO


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_ppo_example_runs(tmp_path, env_id):
    script = REPO / "examples" / "PPO" / "train.py"
    args = ["--env", env_id, "--total-steps", "256", "--num-envs", "1", "--quiet"]
    result = subprocess.run(
        [sys.executable, str(script), *args, "--logdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "final evaluation: mean return" in result.stdout
