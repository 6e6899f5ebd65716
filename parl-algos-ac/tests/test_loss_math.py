"""Losses, targets and updates against hand-written numpy on tiny batches.

The models are linear (``parl.testing.LinearModel`` pieces), so every quantity is a few lines
of numpy. Random draws (TD3's smoothing noise, SAC's reparameterised samples) are replaced by
fixed arrays through ``paddle.randn``.
"""

from __future__ import annotations

import math

import parl
from parl.testing import LinearModel

import numpy as np
import paddle
import pytest

from parl_algos_ac import A2C, DDPG, SAC, TD3, DeterministicActorCritic, GaussianActorCritic

GAMMA, TAU = 0.9, 0.1
OBS, ACT, B = 3, 2, 5


class TinyActorCritic(parl.Model):
    """A linear actor (tanh or Gaussian) and linear critics returned PARL's way, ``(Q1, Q2)``."""

    def __init__(self, critics: int, gaussian: bool) -> None:
        super().__init__()
        self.gaussian = gaussian
        self.actor = LinearModel(OBS, 2 * ACT if gaussian else ACT)
        self.critics = paddle.nn.LayerList([LinearModel(OBS + ACT, 1) for _ in range(critics)])

    def policy(self, obs):
        out = self.actor(obs)
        return tuple(paddle.split(out, 2, axis=-1)) if self.gaussian else paddle.tanh(out)

    def value(self, obs, act):
        q = [critic(paddle.concat([obs, act], axis=-1)) for critic in self.critics]
        return q[0] if len(q) == 1 else tuple(q)

    def get_actor_params(self):
        return self.actor.parameters()

    def get_critic_params(self):
        return self.critics.parameters()


def _batch(rng):
    obs = rng.normal(size=(B, OBS)).astype(np.float32)
    action = rng.uniform(-1, 1, size=(B, ACT)).astype(np.float32)
    reward = rng.normal(size=B).astype(np.float32)
    next_obs = rng.normal(size=(B, OBS)).astype(np.float32)
    terminal = np.array([0, 1, 0, 0, 1], dtype=np.float32)
    return obs, action, reward, next_obs, terminal


def _linear(weights, prefix, x):
    return x @ weights[f"{prefix}.fc.weight"] + weights[f"{prefix}.fc.bias"]


def _q(weights, critics, obs, act):
    x = np.concatenate([obs, act], axis=1)
    return np.stack([_linear(weights, f"critics.{k}", x)[:, 0] for k in range(critics)])


def _make(cls, critics, gaussian, **options):
    model = TinyActorCritic(critics, gaussian)
    algorithm = cls(model, gamma=GAMMA, tau=TAU, **options)
    # A target unlike the model, so that a mix-up of the two shows.
    algorithm.target_model.set_weights({k: v * 0.5 - 0.1 for k, v in model.get_weights().items()})
    return algorithm


def _fixed_randn(monkeypatch, *arrays):
    draws = iter(arrays)

    def randn(shape, dtype=None, name=None):
        value = next(draws)
        assert list(value.shape) == list(shape), f"asked for {shape}, have {value.shape}"
        return paddle.to_tensor(value, dtype=dtype or "float32")

    monkeypatch.setattr(paddle, "randn", randn)


def _check_soft_update(algorithm, target_before, model_after):
    for name, value in algorithm.target_model.get_weights().items():
        expected = (1 - TAU) * target_before[name] + TAU * model_after[name]
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


def test_ddpg_losses_and_soft_update(rng) -> None:
    algorithm = _make(DDPG, 1, False)
    online, target = algorithm.model.get_weights(), algorithm.target_model.get_weights()
    obs, action, reward, next_obs, terminal = _batch(rng)

    critic_loss, actor_loss = algorithm.learn(obs, action, reward[:, None], next_obs, terminal)

    next_action = np.tanh(_linear(target, "actor", next_obs))
    y = reward + GAMMA * (1 - terminal) * _q(target, 1, next_obs, next_action)[0]
    q = _q(online, 1, obs, action)[0]
    assert float(critic_loss) == pytest.approx(np.mean((q - y) ** 2), rel=1e-5)
    # The actor is judged by the critic after its step (PARL's order).
    after = algorithm.model.get_weights()
    pi = np.tanh(_linear(online, "actor", obs))
    assert float(actor_loss) == pytest.approx(-np.mean(_q(after, 1, obs, pi)[0]), rel=1e-5)
    _check_soft_update(algorithm, target, after)


def test_td3_target_smooths_clips_and_takes_the_min(rng, monkeypatch) -> None:
    algorithm = _make(TD3, 2, False, policy_noise=0.2, noise_clip=0.3)
    online, target = algorithm.model.get_weights(), algorithm.target_model.get_weights()
    obs, action, reward, next_obs, terminal = _batch(rng)
    noise = rng.normal(size=(B, ACT)).astype(np.float32) * 3  # many beyond noise_clip
    _fixed_randn(monkeypatch, noise)

    critic_loss = algorithm.learn(obs, action, reward, next_obs, terminal)

    smoothed = np.tanh(_linear(target, "actor", next_obs)) + np.clip(noise * 0.2, -0.3, 0.3)
    next_q = _q(target, 2, next_obs, np.clip(smoothed, -1, 1)).min(axis=0)
    y = reward + GAMMA * (1 - terminal) * next_q
    expected = ((_q(online, 2, obs, action) - y) ** 2).mean(axis=1).sum()
    assert float(critic_loss) == pytest.approx(expected, rel=1e-5)
    # policy_freq=2: the first call leaves the actor and the targets alone.
    after = algorithm.model.get_weights()
    for name in ("actor.fc.weight", "actor.fc.bias"):
        np.testing.assert_array_equal(after[name], online[name])
    for name, value in algorithm.target_model.get_weights().items():
        np.testing.assert_array_equal(value, target[name])


def _tanh_gaussian(weights, obs, eps):
    """SAC's reparameterised sample and its log-probability, written out (in float64)."""
    weights = {name: value.astype(np.float64) for name, value in weights.items()}
    out = _linear(weights, "actor", obs.astype(np.float64))
    mean, log_std = out[:, :ACT], out[:, ACT:]
    x = mean + np.exp(log_std) * eps.astype(np.float64)
    log_normal = (-0.5 * eps**2 - log_std - 0.5 * math.log(2 * math.pi)).sum(axis=1)
    log_det = np.log(1 - np.tanh(x) ** 2).sum(axis=1)
    return np.tanh(x), log_normal - log_det


@pytest.mark.parametrize("auto", [False, True])
def test_sac_entropy_terms_and_alpha_loss(rng, monkeypatch, auto) -> None:
    alpha, lr = 0.3, 0.05
    options = {"alpha": "auto", "initial_alpha": alpha, "alpha_lr": lr} if auto else {}
    algorithm = _make(SAC, 2, True, **(options or {"alpha": alpha}))
    online, target = algorithm.model.get_weights(), algorithm.target_model.get_weights()
    obs, action, reward, next_obs, terminal = _batch(rng)
    eps = rng.normal(size=(2 * B, ACT)).astype(np.float32)
    _fixed_randn(monkeypatch, eps[:B], eps[B:])

    critic_loss, actor_loss = algorithm.learn(obs, action, reward, next_obs, terminal)

    # The policy samples at obs first (the first B draws), then at next_obs (the rest).
    next_action, next_logp = _tanh_gaussian(online, next_obs, eps[B:])
    soft = _q(target, 2, next_obs, next_action).min(axis=0) - alpha * next_logp
    y = reward + GAMMA * (1 - terminal) * soft
    expected = ((_q(online, 2, obs, action) - y) ** 2).mean(axis=1).sum()
    assert float(critic_loss) == pytest.approx(expected, rel=1e-4)

    after = algorithm.model.get_weights()
    pi, logp = _tanh_gaussian(online, obs, eps[:B])
    expected_actor = np.mean(alpha * logp - _q(after, 2, obs, pi).min(axis=0))
    assert float(actor_loss) == pytest.approx(expected_actor, rel=1e-4)
    _check_soft_update(algorithm, target, after)

    if not auto:
        assert float(algorithm.alpha) == pytest.approx(alpha) and algorithm.alpha_loss is None
        return
    target_entropy = -ACT  # the default: -|A|
    gap = np.mean(logp + target_entropy)
    assert float(algorithm.alpha_loss) == pytest.approx(-math.log(alpha) * gap, rel=1e-4)
    # d(alpha_loss)/d(log_alpha) = -gap; Adam's first step moves by lr against its sign.
    new_log_alpha = math.log(alpha) + lr * np.sign(gap)
    assert float(algorithm.log_alpha) == pytest.approx(new_log_alpha, rel=1e-5)


def test_a2c_sums_and_signed_entropy_coefficient(rng) -> None:
    class TinyA2CModel(parl.Model):
        def __init__(self) -> None:
            super().__init__()
            self.pi, self.v = LinearModel(OBS, 3), LinearModel(OBS, 1)

        def policy(self, obs):
            return self.pi(obs)

        def value(self, obs):
            return self.v(obs)

        def policy_and_value(self, obs):
            return self.pi(obs), self.v(obs)

    algorithm = A2C(TinyA2CModel(), vf_loss_coeff=0.5)
    weights = algorithm.model.get_weights()
    obs = rng.normal(size=(B, OBS)).astype(np.float32)
    actions = rng.integers(0, 3, size=(B, 1))
    advantages, targets = rng.normal(size=B), rng.normal(size=B)

    losses = algorithm.learn(obs, actions, advantages, targets, 0.02, -0.01)

    logits = _linear(weights, "pi", obs)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    pi_loss = -np.sum(log_probs[np.arange(B), actions[:, 0]] * advantages)
    vf_loss = 0.5 * np.sum((_linear(weights, "v", obs)[:, 0] - targets) ** 2)
    entropy = -np.sum(np.exp(log_probs) * log_probs)
    expected = [pi_loss + 0.5 * vf_loss - 0.01 * entropy, pi_loss, vf_loss, entropy]
    np.testing.assert_allclose([float(x) for x in losses], expected, rtol=1e-5)
    assert algorithm.optimizer.get_lr() == pytest.approx(0.02)


@pytest.mark.parametrize("algo", [DDPG, TD3, SAC])
def test_actor_loss_computes_no_critic_weight_gradients(rng, algo) -> None:
    # The actor's step needs dQ/d(action) only; the critic's weight gradients are skipped.
    algorithm = _make(algo, 1 if algo is DDPG else 2, algo is SAC)
    obs = paddle.to_tensor(rng.normal(size=(B, OBS)).astype(np.float32))
    action = paddle.tanh(paddle.to_tensor(rng.normal(size=(B, ACT)).astype(np.float32)))
    action.stop_gradient = False
    algorithm._q_for_actor(obs, action).sum().backward()
    assert action.grad is not None and float(action.grad.abs().sum()) > 0
    for param in algorithm.model.get_critic_params():
        assert param.grad is None or not float(param.grad.abs().sum())
        assert not param.stop_gradient  # restored for the critic's own step


@pytest.mark.parametrize("model_class", [DeterministicActorCritic, GaussianActorCritic])
def test_q1_is_the_first_critic_of_the_ensemble(rng, model_class) -> None:
    model = model_class(OBS, ACT, hidden_sizes=(8, 8), num_critics=2)
    obs = paddle.to_tensor(rng.normal(size=(B, OBS)).astype(np.float32))
    action = paddle.to_tensor(rng.uniform(-1, 1, size=(B, ACT)).astype(np.float32))
    np.testing.assert_allclose(
        model.Q1(obs, action).numpy(), model.value(obs, action)[0].numpy(), rtol=1e-6
    )


def test_separate_trunks_keep_the_value_loss_out_of_the_policy(rng) -> None:
    from parl_algos_ac import DiscreteActorCritic

    model = DiscreteActorCritic(OBS, 3, hidden_sizes=(8,), shared=False)
    algorithm = A2C(model, vf_loss_coeff=0.5)
    before = model.get_weights()
    obs = rng.normal(size=(B, OBS)).astype(np.float32)
    # Zero advantages and no entropy term: only the value loss moves anything.
    algorithm.learn(obs, rng.integers(0, 3, size=B), np.zeros(B), rng.normal(size=B), 0.01, 0.0)
    after = model.get_weights()
    for name in before:
        moved = not np.array_equal(before[name], after[name])
        assert moved == name.startswith(("v_trunk.", "v.")), name
