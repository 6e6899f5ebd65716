"""OAC's exploration shift against the paper's closed form (its contract suite runs in
test_algorithms.py with the other continuous-action algorithms)."""

from __future__ import annotations

import parl

import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_ac import OAC, ContinuousAgent, GaussianActorCritic, OACConfig


class LinearCritics(parl.Model):
    """A policy with a fixed pre-tanh mean and std, and two critics linear in the action."""

    def __init__(self, mean, log_std, w1, w2) -> None:
        super().__init__()
        self.mean = paddle.to_tensor(np.asarray(mean, np.float32))
        self.log_std = paddle.to_tensor(np.asarray(log_std, np.float32))
        self.w = self.create_parameter([2, len(w1)])
        self.w.set_value(np.stack([w1, w2]).astype(np.float32))

    def policy(self, obs):
        batch = obs.shape[0]
        return self.mean.expand([batch, -1]), self.log_std.expand([batch, -1])

    def value(self, obs, act):
        return paddle.matmul(self.w, act.T)  # [2, B]

    def get_actor_params(self):
        return [self.w]  # the tests never step the actor

    def get_critic_params(self):
        return [self.w]


def closed_form(mean, std, w1, w2, beta, delta):
    """mu_E of Ciosek et al. (2019), eq. 11, for Q_k(a) = w_k·a at a = tanh(mean)."""
    action = np.tanh(mean)
    spread_sign = np.sign((w1 - w2) @ action)
    grad_action = (w1 + w2) / 2 + beta * spread_sign * (w1 - w2) / 2
    grad = grad_action * (1 - action**2)  # chain rule through tanh, to the pre-tanh mean
    variance = std**2
    return mean + np.sqrt(2 * delta) * variance * grad / np.sqrt(grad**2 @ variance)


@pytest.mark.parametrize(("beta", "delta"), [(0.0, 1.0), (4.66, 23.53), (2.0, 0.1)])
def test_exploration_shift_is_the_closed_form(beta, delta) -> None:
    mean, log_std = np.array([0.3, -0.5]), np.array([-0.7, 0.2])
    w1, w2 = np.array([1.0, -2.0]), np.array([0.5, 1.0])
    algorithm = OAC(LinearCritics(mean, log_std, w1, w2), beta=beta, delta=delta)
    mu_e, std = algorithm.optimistic_distribution(np.zeros((3, 4), np.float32))
    expected = closed_form(mean, np.exp(log_std), w1, w2, beta, delta)
    np.testing.assert_allclose(mu_e.numpy(), np.tile(expected, (3, 1)), rtol=1e-5)
    np.testing.assert_allclose(std.numpy()[0], np.exp(log_std), rtol=1e-6)
    # The shift spends exactly the KL budget: KL(N(mu_E, S) || N(mu_T, S)) = delta.
    kl = 0.5 * (((mu_e.numpy()[0] - mean) / np.exp(log_std)) ** 2).sum()
    assert kl == pytest.approx(delta, rel=1e-4)


def test_exploration_samples_around_the_shifted_mean() -> None:
    mean, log_std = np.array([0.2]), np.array([-1.0])
    algorithm = OAC(LinearCritics(mean, log_std, np.array([1.0]), np.array([3.0])), delta=0.02)
    agent = ContinuousAgent(algorithm)
    obs = np.zeros((4000, 1), np.float32)
    pre_tanh = np.arctanh(agent.sample(obs)[:, 0])
    expected = closed_form(mean, np.exp(log_std), np.array([1.0]), np.array([3.0]), 4.66, 0.02)
    assert abs(pre_tanh.mean() - expected[0]) < 4 * np.exp(-1.0) / np.sqrt(4000)
    assert pre_tanh.std() == pytest.approx(np.exp(-1.0), rel=0.05)
    assert expected[0] > mean[0] + 0.05  # optimism moved it towards the larger Q
    single = agent.sample(np.zeros(1, np.float32))
    assert single.shape == (1,)


def test_parl_signature_and_registry() -> None:
    oac = OAC(GaussianActorCritic(2, 1), 0.9, 0.01, 0.1, 3.0, 5.0, 1e-4, 2e-4)
    assert oac.config == OACConfig(
        gamma=0.9, tau=0.01, alpha=0.1, beta=3.0, delta=5.0, actor_lr=1e-4, critic_lr=2e-4
    )
    assert parl.algorithms.get("OAC") is OAC
    with pytest.raises(pydantic.ValidationError, match="delta"):
        OAC(GaussianActorCritic(2, 1), delta=-1.0)
