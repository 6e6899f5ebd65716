"""DQN and DDQN losses and updates against hand-written numpy on tiny batches."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from parl_algos_dqn import DDQN, DQN

GAMMA = 0.9
LR = 1e-2


def _batch(rng: np.random.Generator, batch: int = 5, obs_dim: int = 3, act_dim: int = 2):
    obs = rng.normal(size=(batch, obs_dim)).astype(np.float32)
    action = rng.integers(0, act_dim, size=batch)
    reward = rng.normal(size=batch).astype(np.float32)
    next_obs = rng.normal(size=(batch, obs_dim)).astype(np.float32)
    terminal = np.array([0, 1, 0, 0, 1][:batch], dtype=np.float32)
    return obs, action, reward, next_obs, terminal


def _weights(rng: np.random.Generator, obs_dim: int = 3, act_dim: int = 2):
    return {
        "fc.weight": rng.normal(size=(obs_dim, act_dim)).astype(np.float32),
        "fc.bias": rng.normal(size=act_dim).astype(np.float32),
    }


def _numpy_target(cls, online, target, reward, next_obs, terminal):
    next_target_q = next_obs @ target["fc.weight"] + target["fc.bias"]
    if cls is DDQN:
        best = (next_obs @ online["fc.weight"] + online["fc.bias"]).argmax(axis=1)
        next_value = next_target_q[np.arange(len(best)), best]
    else:
        next_value = next_target_q.max(axis=1)
    return reward + GAMMA * (1.0 - terminal) * next_value


def _numpy_huber(diff: np.ndarray, delta: float) -> np.ndarray:
    absolute = np.abs(diff)
    return np.where(absolute < delta, 0.5 * diff**2, delta * (absolute - 0.5 * delta))


def _make(cls, helpers, online, target, **options):
    algorithm = cls(helpers.LinearQ(3, 2), gamma=GAMMA, lr=LR, **options)
    algorithm.model.set_weights(online)
    algorithm.target_model.set_weights(target)
    return algorithm


def _tensors(*arrays):
    return [paddle.to_tensor(a) for a in arrays]


@pytest.mark.parametrize("cls", [DQN, DDQN])
@pytest.mark.parametrize(("loss", "delta"), [("mse", None), ("huber", 1.0), ("huber", 0.3)])
def test_loss_matches_numpy(cls, loss, delta, helpers, rng) -> None:
    online, target = _weights(rng), _weights(rng)
    obs, action, reward, next_obs, terminal = _batch(rng)
    options = {"loss": loss} if delta is None else {"loss": loss, "huber_delta": delta}
    algorithm = _make(cls, helpers, online, target, **options)

    got = float(algorithm.learn(*_tensors(obs, action, reward, next_obs, terminal)))

    chosen = (obs @ online["fc.weight"] + online["fc.bias"])[np.arange(len(action)), action]
    y = _numpy_target(cls, online, target, reward, next_obs, terminal)
    expected = (
        np.mean((chosen - y) ** 2) if loss == "mse" else np.mean(_numpy_huber(chosen - y, delta))
    )
    assert got == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("cls", [DQN, DDQN])
def test_update_follows_online_gradient_and_keeps_target(cls, helpers, rng) -> None:
    online, target = _weights(rng), _weights(rng)
    obs, action, reward, next_obs, terminal = _batch(rng)
    algorithm = _make(cls, helpers, online, target)

    algorithm.learn(*_tensors(obs, action, reward[:, None], next_obs, terminal[:, None]))

    # d(mean squared TD error)/d(chosen Q); the target is a constant.
    batch = len(action)
    chosen = (obs @ online["fc.weight"] + online["fc.bias"])[np.arange(batch), action]
    y = _numpy_target(cls, online, target, reward, next_obs, terminal)
    grad_q = np.zeros((batch, 2), dtype=np.float32)
    grad_q[np.arange(batch), action] = 2.0 * (chosen - y) / batch
    grads = {"fc.weight": obs.T @ grad_q, "fc.bias": grad_q.sum(axis=0)}
    new = algorithm.model.get_weights()
    for name, grad in grads.items():
        # Adam's first step moves every parameter by lr against the sign of its gradient.
        np.testing.assert_allclose(new[name], online[name] - LR * np.sign(grad), atol=1e-5)
    for name, value in algorithm.target_model.get_weights().items():
        np.testing.assert_array_equal(value, target[name])


def test_ddqn_target_differs_from_dqn_where_argmaxes_disagree(helpers) -> None:
    # Online net prefers action 0 at next_obs (Q = [1, 0]); target net values it [0, 5].
    online = {
        "fc.weight": np.array([[1, 0], [0, 0], [0, 0]], np.float32),
        "fc.bias": np.zeros(2, np.float32),
    }
    target = {
        "fc.weight": np.array([[0, 5], [0, 0], [0, 0]], np.float32),
        "fc.bias": np.zeros(2, np.float32),
    }
    obs = np.zeros((1, 3), np.float32)
    next_obs = np.array([[1, 0, 0]], np.float32)
    batch = _tensors(obs, np.array([0]), np.zeros(1, np.float32), next_obs, np.zeros(1, np.float32))
    # Q(obs) = 0, so the loss is the squared target: DQN bootstraps max = 5, DDQN Q_tgt(s', 0) = 0.
    assert float(_make(DQN, helpers, online, target).learn(*batch)) == pytest.approx(
        (GAMMA * 5) ** 2
    )
    assert float(_make(DDQN, helpers, online, target).learn(*batch)) == pytest.approx(0.0)


@pytest.mark.parametrize("cls", [DQN, DDQN])
def test_terminal_stops_bootstrapping(cls, helpers, rng) -> None:
    online, target = _weights(rng), _weights(rng)
    obs, action, reward, next_obs, _ = _batch(rng)
    terminal = np.ones(len(action), np.float32)
    got = float(
        _make(cls, helpers, online, target).learn(
            *_tensors(obs, action, reward, next_obs, terminal.astype(bool))
        )
    )
    chosen = (obs @ online["fc.weight"] + online["fc.bias"])[np.arange(len(action)), action]
    assert got == pytest.approx(np.mean((chosen - reward) ** 2), rel=1e-5)


def test_sync_target_hard_and_soft(helpers, rng) -> None:
    online, target = _weights(rng), _weights(rng)
    algorithm = _make(DQN, helpers, online, target)
    algorithm.sync_target(decay=0.75)
    for name, value in algorithm.target_model.get_weights().items():
        np.testing.assert_allclose(value, 0.75 * target[name] + 0.25 * online[name], rtol=1e-6)
    algorithm.sync_target()
    for name, value in algorithm.target_model.get_weights().items():
        np.testing.assert_array_equal(value, online[name])
