"""PPO on both frameworks: loss math, global-norm clipping, learning, checkpoints, determinism,
bad input."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import parl
from parl.core.errors import ModelContractError
from parl.core.neutral import Model
from parl.testing import AlgorithmContract, BadInput

import gymnasium as gym
import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_pg import PPO, PPOAgent, PPOConfig

REPO = Path(__file__).resolve().parents[2]


class LinearDiscrete(Model):
    """Linear logits and a linear value: small enough to differentiate by hand."""

    def __init__(self, obs_dim: int = 3, act_dim: int = 2, *, backend=None) -> None:
        super().__init__()
        self.pi = self.nn.Linear(obs_dim, act_dim)
        self.v = self.nn.Linear(obs_dim, 1)

    def policy(self, obs):
        return self.pi(obs)

    def value(self, obs):
        return self.v(obs)


class LinearGaussian(Model):
    """Linear mean, state-independent log-std, linear value."""

    def __init__(self, obs_dim: int = 3, act_dim: int = 2, *, backend=None) -> None:
        super().__init__()
        self.mu = self.nn.Linear(obs_dim, act_dim)
        self.v = self.nn.Linear(obs_dim, 1)
        self.log_std = self.ops.full_parameter([1, act_dim], 0.0)

    def policy(self, obs):
        mean = self.mu(obs)
        return mean, self.log_std.exp().expand_as(mean)

    def value(self, obs):
        return self.v(obs).squeeze(-1)


class RowStdGaussian(LinearGaussian):
    """PARL's MuJoCo model: ``policy`` returns a ``[1, act_dim]`` std, not expanded."""

    def policy(self, obs):
        return self.mu(obs), self.log_std.exp()


class WideStdGaussian(LinearGaussian):
    """A broken model: three standard deviations for a one-dimensional action."""

    def policy(self, obs):
        return self.mu(obs), self.ops.to_tensor(np.ones(3))


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


@pytest.mark.parametrize("as_tensor", [False, True])
def test_whole_number_float_actions_learn_as_ints(as_tensor):
    """PARL's Atari PPO passes discrete actions from a float buffer (issue 20)."""
    action = np.array([0, 1, 1, 0, 1])
    floats = action.astype(np.float32).reshape(5, 1)
    old_logp = np.full(5, -0.7, np.float32)
    results = []
    for given in (action, paddle.to_tensor(floats) if as_tensor else floats):
        model = LinearDiscrete()
        _set(model)
        results.append(PPO(model).learn(OBS, given, OLD_VALUE, RETURNS, old_logp, ADV))
    assert results[0] == results[1]


@pytest.mark.parametrize("bad", [0.5, np.nan, np.inf])
def test_fractional_float_actions_are_refused(bad):
    model = LinearDiscrete()
    action = np.array([0.0, 1.0, bad, 0.0, 1.0])
    before = model.get_weights()
    with pytest.raises(
        ValueError, match=r"discrete actions must be whole numbers, got (0\.5|nan|inf)"
    ):
        PPO(model).learn(OBS, action, OLD_VALUE, RETURNS, np.zeros(5), ADV)
    after = model.get_weights()
    assert all(np.array_equal(before[name], after[name]) for name in before)  # nothing applied


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
    batch = probe._batch(OBS, action, OLD_VALUE, RETURNS, old_logp, ADV, "test")
    before = model.get_weights()
    probe._step(batch, "test")
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


def _learn_zero_actions(alg: PPO, **kwargs) -> tuple[float, float, float]:
    return alg.learn(
        OBS, np.zeros(5, dtype=np.int64), OLD_VALUE, RETURNS, np.zeros(5), ADV, **kwargs
    )


def test_learn_lr_sets_the_rate_and_zero_or_none_keep_it_like_parl():
    alg = PPO(LinearDiscrete(), initial_lr=1e-3)
    assert alg.optimizer.get_lr() == pytest.approx(1e-3)
    _learn_zero_actions(alg, lr=5e-4)
    assert alg.optimizer.get_lr() == pytest.approx(5e-4)
    # PARL's `if lr:`: a LinearDecayScheduler ends at exactly 0.0 on the last update.
    before = alg.get_weights()
    _learn_zero_actions(alg, lr=0.0)
    _learn_zero_actions(alg, lr=None)
    assert alg.optimizer.get_lr() == pytest.approx(5e-4)
    assert any(not np.array_equal(v, before[k]) for k, v in alg.get_weights().items())
    for bad in (-1, float("nan"), "0.1", True):
        with pytest.raises(ValueError, match="lr must be a non-negative number or None"):
            _learn_zero_actions(alg, lr=bad)
    assert alg.optimizer.get_lr() == pytest.approx(5e-4)


def test_std_shaped_1_by_act_dim_broadcasts_like_an_expanded_one():
    broadcast, expanded = RowStdGaussian(), LinearGaussian()
    weights = _set(broadcast)
    expanded.set_weights(weights)
    action = RNG.normal(size=(5, 2)).astype(np.float32)
    old_logp = np.full(5, -2.0, dtype=np.float32)
    losses = [
        PPO(model, continuous_action=True).learn(OBS, action, OLD_VALUE, RETURNS, old_logp, ADV)
        for model in (broadcast, expanded)
    ]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-6)
    for name, value in broadcast.get_weights().items():
        np.testing.assert_allclose(value, expanded.get_weights()[name], rtol=1e-6)
    value, sampled, logp, entropy = PPO(broadcast, continuous_action=True).sample(OBS)
    assert sampled.shape == [1, 5, 2] and logp.shape == [1, 5] and entropy.shape == [5]


def test_max_grad_norm_none_switches_clipping_off():
    model = LinearDiscrete()
    _set(model)
    unclipped, clipped = copy.deepcopy(model), copy.deepcopy(model)
    lr, eps, action, old_logp = 0.1, 1e3, np.array([0, 1, 1, 0, 1]), np.full(5, -0.7, np.float32)
    for net, norm in ((unclipped, None), (clipped, 0.01)):
        alg = PPO(net, max_grad_norm=norm, initial_lr=lr, eps=eps)
        alg.learn(OBS, action, OLD_VALUE, RETURNS, old_logp, ADV)
    assert PPO(LinearDiscrete(), max_grad_norm=None).config.max_grad_norm is None
    assert PPO(LinearDiscrete()).config.max_grad_norm == 0.5  # left out: the config's value
    step = [
        np.abs(n.get_weights()["pi.weight"] - model.get_weights()["pi.weight"]).max()
        for n in (unclipped, clipped)
    ]
    assert step[0] > 10 * step[1]


@pytest.mark.parametrize("continuous", [False, True])
def test_one_unbatched_observation_goes_to_the_model_as_it_is(continuous):
    alg = PPO(RowStdGaussian() if continuous else LinearDiscrete(), continuous_action=continuous)
    value, action, logp, entropy = alg.sample(OBS[0])
    assert logp.shape == [1] and entropy.shape == []
    assert action.shape == ([1, 2] if continuous else [1])
    assert alg.predict(OBS[0]).shape == ([2] if continuous else [])
    np.testing.assert_allclose(alg.value(OBS[0]).numpy(), alg.value(OBS[:1]).numpy(), rtol=1e-6)
    # The log-probs returned by sample are those learn recomputes.
    value, action, logp, _ = alg.sample(OBS)
    losses = alg.learn(OBS, action[0], value, value, logp[0], paddle.zeros([5]))
    assert all(np.isfinite(losses))


def _rollout_learn(agent, envs, obs, steps: int) -> np.ndarray:
    """Collect ``steps`` vector steps, then learn; gamma = 0 so the advantage is r - V."""
    rows = []
    for _ in range(steps):
        value, action, logp = agent.sample(obs)
        next_obs, reward, _, _, _ = envs.step(action)
        rows.append((obs, action, value, logp, reward.astype(np.float32)))
        obs = next_obs
    b_obs, b_act, b_val, b_logp, b_rew = (np.concatenate(c) for c in zip(*rows, strict=True))
    agent.learn(b_obs, b_act, b_val, b_rew, b_logp, b_rew - b_val, 2, 2, None)
    return obs


class PPOContract(AlgorithmContract):
    """The suite once per backend: the paddle PPO and the torch one (marker ``torch``)."""

    algorithm_name = "PPO"
    backends = ("paddle", "torch")
    iterations = 12

    def make_model(self, backend: str) -> Model:
        raise NotImplementedError

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        continuous = self.action_kind == "continuous"
        options = {"initial_lr": 0.02, "clip_param": 0.2, "continuous_action": continuous}
        model = self.make_model(self.backend)
        algorithm = self.algorithm_class(model, **{**options, **config})
        return PPOAgent(algorithm, seed)

    def explore(self, agent, obs):
        return agent.sample(obs)[1]

    def train(self, agent, env, steps, seed):
        make_env = type(env)
        envs = gym.vector.SyncVectorEnv(
            [lambda: make_env(env.unwrapped.observation_space.shape[0], 16)] * 8
        )
        obs, _ = envs.reset(seed=seed)
        for _ in range(steps):
            obs = _rollout_learn(agent, envs, obs, 16)
        envs.close()

    def learn_batch(self, agent, rng):
        """A rollout drawn from ``rng`` alone, so that both backends learn from the same one."""
        obs = self._probe(8) + rng.normal(scale=0.1, size=self._probe(8).shape)
        if self.action_kind == "continuous":
            action = rng.uniform(-1.0, 1.0, size=(8, 1)).astype(np.float32)
        else:
            action = rng.integers(0, 4, size=8)
        value, returns = rng.normal(size=(2, 8)).astype(np.float32)
        logp = rng.normal(-1.0, 0.3, size=8).astype(np.float32)
        obs = obs.astype(np.float32)
        return agent.learn(obs, action, value, returns, logp, returns - value, 2, 2, None)


class TestPPODiscreteContract(PPOContract):
    solved_score = 0.95
    train_steps = 12
    short_train_steps = 2

    def make_model(self, backend):
        return LinearDiscrete(4, 4, backend=backend)

    def bad_inputs(self, agent):
        obs = self._probe(5)
        actions = np.zeros(5, dtype=np.int64)
        alg, PPO, backend = agent.alg, self.algorithm_class, self.backend
        yield from (
            BadInput(
                "advantages of another batch size",
                lambda: alg.learn(obs, actions, OLD_VALUE, RETURNS, RETURNS, ADV[:4]),
                ValueError,
                r"batch_adv must have shape \[5\]",
            ),
            BadInput(
                "too few actions",
                lambda: alg.learn(obs, actions[:3], OLD_VALUE, RETURNS, RETURNS, ADV),
                ValueError,
                r"discrete actions must have shape \[5\]",
            ),
            BadInput(
                "actions out of range",
                lambda: alg.learn(obs, actions + 4, OLD_VALUE, RETURNS, RETURNS, ADV),
                ValueError,
                r"in \[0, 4\)",
            ),
            BadInput(
                "float actions for a discrete PPO",
                lambda: alg.learn(
                    obs, np.zeros((5, 2), np.float32), OLD_VALUE, RETURNS, RETURNS, ADV
                ),
                TypeError,
                "continuous_action=False",
            ),
            BadInput(
                "a rollout that does not split into minibatches",
                lambda: alg.learn_epochs(obs, actions, OLD_VALUE, RETURNS, RETURNS, ADV, 1, 2),
                ValueError,
                "does not split into 2 equal minibatches",
            ),
            BadInput(
                "zero epochs",
                lambda: alg.learn_epochs(obs, actions, OLD_VALUE, RETURNS, RETURNS, ADV, 0, 1),
                ValueError,
                "epochs must be an integer > 0",
            ),
            BadInput(
                "a Gaussian model under a discrete PPO",
                lambda: PPO(LinearGaussian(4, 2, backend=backend)).sample(obs),
                TypeError,
                "must return logits",
            ),
            BadInput(
                "clip_param out of range",
                lambda: PPO(LinearDiscrete(4, 4, backend=backend), clip_param=1.5),
                pydantic.ValidationError,
                "clip_param",
            ),
        )


class TestPPOContinuousContract(PPOContract):
    action_kind = "continuous"
    solved_score = -0.05
    train_steps = 25
    short_train_steps = 2

    def make_model(self, backend):
        return RowStdGaussian(1, 1, backend=backend)

    def bad_inputs(self, agent):
        obs = self._probe(5)
        PPO, backend = self.algorithm_class, self.backend
        wide, logits = WideStdGaussian(1, 1, backend=backend), LinearDiscrete(1, 2, backend=backend)
        yield from (
            BadInput(
                "integer actions for a continuous PPO",
                lambda: agent.alg.learn(
                    obs, np.zeros(5, np.int64), OLD_VALUE, RETURNS, RETURNS, ADV
                ),
                TypeError,
                "continuous_action=True",
            ),
            BadInput(
                "actions with more dimensions than the policy",
                lambda: agent.alg.learn(
                    obs, np.zeros((5, 3), np.float32), OLD_VALUE, RETURNS, RETURNS, ADV
                ),
                ValueError,
                "3 dimensions but model.policy returns a 1",
            ),
            BadInput(
                "a std that does not broadcast against the mean",
                lambda: PPO(wide, continuous_action=True).sample(obs),
                ValueError,
                r"mean \[5, 1\] and std \[3\], which do not broadcast",
            ),
            BadInput(
                "a logits model under a continuous PPO",
                lambda: PPO(logits, continuous_action=True).predict(obs),
                TypeError,
                r"must return \(mean, std\)",
            ),
        )


def test_config_object():
    alg = PPO(LinearDiscrete(), config=PPOConfig(clip_param=0.3), entropy_coef=0.0)
    assert (alg.config.clip_param, alg.config.entropy_coef) == (0.3, 0.0)
    assert PPO(LinearDiscrete()).config == PPOConfig()


def test_model_missing_value_is_refused():
    class PolicyOnly(Model):
        def __init__(self, *, backend=None) -> None:
            super().__init__()

        def policy(self, obs):
            return obs

    with pytest.raises(ModelContractError, match="'value'"):
        PPO(PolicyOnly())


def test_registry_lookup():
    assert parl.algorithms.get("PPO") is PPO


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_ppo_example_runs(tmp_path, env_id):
    script = REPO / "examples" / "PPO" / "train.py"
    args = ["--env-id", env_id, "--total-steps", "256", "--num-envs", "1", "--quiet"]
    result = subprocess.run(
        [sys.executable, str(script), *args, "--target-kl", "0.05", "--logdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "final evaluation: mean greedy return" in result.stdout
    tags = {row.split(",")[1] for row in (tmp_path / "metrics.csv").read_text().splitlines()[1:]}
    assert {"losses/approx_kl", "losses/clip_fraction", "losses/explained_variance"} <= tags
    assert {"charts/update_epochs", "charts/SPS", "eval/episodic_return"} <= tags
    assert "target_kl: 0.05" in (tmp_path / "config.yaml").read_text()


def test_actions_are_checked_on_every_call_after_the_first_has_read_the_width():
    alg = PPO(LinearDiscrete(3, 2))
    good = np.array([0, 1, 0, 1, 1])
    alg.learn(OBS, good, OLD_VALUE, RETURNS, RETURNS, ADV)
    before = alg.get_weights()
    # Host input only: a tensor's values are not read back (that would wait for the device).
    for bad in (good + 1, good - 1):
        with pytest.raises(ValueError, match=r"in \[0, 2\)"):
            alg.learn(OBS, bad, OLD_VALUE, RETURNS, RETURNS, ADV)
        with pytest.raises(ValueError, match=r"in \[0, 2\)"):
            alg.learn_epochs(OBS, bad, OLD_VALUE, RETURNS, RETURNS, ADV, 2, 1)
    for name, value in alg.get_weights().items():
        np.testing.assert_array_equal(value, before[name])


def test_one_minibatch_epochs_are_full_batch_learn_steps():
    looped, epochs = PPO(LinearDiscrete(3, 2)), PPO(LinearDiscrete(3, 2))
    weights = _set(looped.model)
    epochs.model.set_weights(weights)
    actions = np.array([0, 1, 0, 1, 1])
    losses = [looped.learn(OBS, actions, OLD_VALUE, RETURNS, RETURNS, ADV) for _ in range(3)]
    stats = epochs.learn_epochs(OBS, actions, OLD_VALUE, RETURNS, RETURNS, ADV, 3, 1)
    mean = (stats.value_loss, stats.action_loss, stats.entropy)
    np.testing.assert_allclose(mean, np.mean(losses, axis=0), rtol=1e-5, atol=1e-6)
    for name, value in looped.get_weights().items():
        np.testing.assert_allclose(epochs.get_weights()[name], value, rtol=1e-5, atol=1e-6)


def test_a_refused_batch_leaves_the_learning_rate_as_it_was():
    alg = PPO(LinearDiscrete(), initial_lr=1e-3)
    actions = np.zeros(5, dtype=np.int64)
    with pytest.raises(ValueError, match="batch_adv must have shape"):
        alg.learn(OBS, actions, OLD_VALUE, RETURNS, np.zeros(5), ADV[:4], lr=5e-4)
    with pytest.raises(ValueError, match="does not split into 2"):
        alg.learn_epochs(OBS, actions, OLD_VALUE, RETURNS, np.zeros(5), ADV, 1, 2, lr=5e-4)
    assert alg.optimizer.get_lr() == pytest.approx(1e-3)
