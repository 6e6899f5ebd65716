"""CQL's penalty and IQL's losses against numpy, and what only the offline algorithms have."""

from __future__ import annotations

import parl
from parl.core.errors import ModelContractError

import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_ac import (
    CQL,
    IQL,
    CQLConfig,
    GaussianActorCritic,
    GaussianActorCriticValue,
)
from parl_algos_ac.cql import cql_penalty
from parl_algos_ac.iql import advantage_weights, expectile_loss


def logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    top = x.max(axis=axis, keepdims=True)
    return (top + np.log(np.exp(x - top).sum(axis=axis, keepdims=True))).squeeze(axis)


@pytest.mark.parametrize(
    ("version", "temperature", "weight"), [(3, 1.0, 5.0), (3, 0.5, 1.0), (2, 2.0, 5.0)]
)
def test_cql_penalty_matches_numpy(version, temperature, weight, rng) -> None:
    k, b, n, act_dim = 2, 3, 4, 2
    q_random, q_current, q_next = (rng.normal(size=(k, b, n)).astype(np.float32) for _ in range(3))
    logp_current, logp_next = (rng.normal(size=(b, n)).astype(np.float32) for _ in range(2))
    q_data = rng.normal(size=(k, b)).astype(np.float32)
    got = cql_penalty(
        *map(paddle.to_tensor, (q_random, q_current, logp_current, q_next, logp_next, q_data)),
        act_dim=act_dim,
        min_q_version=version,
        temperature=temperature,
        min_q_weight=weight,
    ).numpy()
    expected = []
    for c in range(k):
        per_state = []
        for s in range(b):
            if version == 3:
                values = np.concatenate(
                    [
                        q_random[c, s] - act_dim * np.log(0.5),
                        q_next[c, s] - logp_next[s],
                        q_current[c, s] - logp_current[s],
                    ]
                )
            else:
                values = np.concatenate(
                    [q_random[c, s], [q_data[c, s]], q_next[c, s], q_current[c, s]]
                )
            per_state.append(temperature * logsumexp(values / temperature, axis=0))
        expected.append(weight * (np.mean(per_state) - q_data[c].mean()))
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_expectile_loss_matches_numpy(rng) -> None:
    diff = rng.normal(size=16).astype(np.float32)
    for expectile in (0.5, 0.7, 0.9):
        weight = np.where(diff < 0, 1 - expectile, expectile)
        expected = np.mean(weight * diff**2)
        got = float(expectile_loss(paddle.to_tensor(diff), expectile))
        assert got == pytest.approx(expected, rel=1e-6)
    # τ = 0.5 is half the mean squared error; larger τ weighs positive errors more.
    assert float(expectile_loss(paddle.to_tensor([2.0]), 0.9)) == pytest.approx(3.6)
    assert float(expectile_loss(paddle.to_tensor([-2.0]), 0.9)) == pytest.approx(0.4)


def test_advantage_weights_are_clipped_and_carry_no_gradient() -> None:
    advantage = paddle.to_tensor([-1.0, 0.0, 0.5, 10.0], stop_gradient=False)
    weights = advantage_weights(advantage, temperature=3.0, max_weight=100.0)
    np.testing.assert_allclose(weights.numpy(), [np.exp(-3.0), 1.0, np.exp(1.5), 100.0], rtol=1e-6)
    assert weights.stop_gradient
    # β = 0 weighs every data action 1: behaviour cloning (the benchmarks' BC baseline).
    np.testing.assert_array_equal(advantage_weights(advantage, 0.0, 100.0).numpy(), np.ones(4))


def test_expectile_value_tracks_an_upper_expectile() -> None:
    """Fitting V by the expectile loss on fixed Q values lands on their τ-expectile."""
    q = paddle.to_tensor(np.linspace(-1.0, 1.0, 101, dtype=np.float32))
    value = paddle.create_parameter(
        [], "float32", default_initializer=paddle.nn.initializer.Constant(0.0)
    )
    optimizer = paddle.optimizer.SGD(learning_rate=0.5, parameters=[value])
    for _ in range(300):
        optimizer.clear_grad()
        expectile_loss(q - value, 0.9).backward()
        optimizer.step()
    # The 0.9-expectile m solves 0.9·E[(q - m)+] = 0.1·E[(m - q)+].
    grid = q.numpy()
    m = float(value)
    balance = 0.9 * np.clip(grid - m, 0, None).mean() - 0.1 * np.clip(m - grid, 0, None).mean()
    assert abs(balance) < 1e-4 and m > 0.4


def batch(rng, size=32):
    obs = rng.uniform(-1, 1, (size, 2)).astype(np.float32)
    action = rng.uniform(-1, 1, (size, 1)).astype(np.float32)
    return obs, action, -(action[:, 0] ** 2), obs, np.zeros(size, np.float32)


def test_cql_lagrange_weight_follows_the_gap(rng) -> None:
    def alpha_prime_after(thresh: float) -> float:
        parl.set_seed(0)
        cql = CQL(GaussianActorCritic(2, 1, (16,)), with_lagrange=True, lagrange_thresh=thresh)
        for _ in range(5):
            cql.learn(*batch(np.random.default_rng(0)))
        return float(cql.alpha_prime)

    # A penalty above the threshold raises α' (its loss is -α'·(penalty - τ)); below lowers it.
    assert alpha_prime_after(-100.0) > 1.0 > alpha_prime_after(100.0)
    fixed = CQL(GaussianActorCritic(2, 1, (16,)))
    fixed.learn(*batch(rng))
    assert float(fixed.alpha_prime) == 1.0 and fixed.alpha_prime_optimizer is None


def test_cql_returns_parl_losses_and_clones_behaviour_first(rng) -> None:
    cql = CQL(GaussianActorCritic(2, 1, (16,)), policy_eval_start=2, min_q_weight=2.0)
    losses = [cql.learn(*batch(rng)) for _ in range(3)]
    assert all(len(step) == 4 for step in losses) and cql.learn_steps == 3
    critic_loss, mse, _, min_q = (float(x) for x in losses[-1])
    assert critic_loss == pytest.approx(mse + float(cql.penalty), rel=1e-5)
    assert np.isfinite(min_q)  # PARL's fourth value: mean min_k Q_k at the policy's actions
    assert cql._learns_alpha() and float(cql.alpha) != 1.0  # tuned by default, as PARL's


def test_cql_parl_signature_and_registry() -> None:
    model = GaussianActorCritic(2, 1)
    cql = CQL(model, 0.9, 0.01, 1e-4, 2e-4, 100, False, True, 5.0, 2, 1.0, 0.3)
    assert cql.config == CQLConfig(
        gamma=0.9,
        tau=0.01,
        actor_lr=1e-4,
        critic_lr=2e-4,
        policy_eval_start=100,
        with_automatic_entropy_tuning=False,
        with_lagrange=True,
        lagrange_thresh=5.0,
        min_q_version=2,
        min_q_weight=1.0,
        alpha=0.3,
    )
    assert float(cql.alpha) == pytest.approx(0.3) and cql.alpha_optimizer is None
    assert parl.algorithms.get("CQL") is CQL and parl.algorithms.get("IQL") is IQL
    with pytest.raises(pydantic.ValidationError, match="min_q_version"):
        CQL(model, min_q_version=1)
    with pytest.raises(pydantic.ValidationError, match="expectile"):
        IQL(GaussianActorCriticValue(2, 1), expectile=1.0)


def test_iql_needs_a_state_value(rng) -> None:
    with pytest.raises(ModelContractError, match="state_value"):
        IQL(GaussianActorCritic(2, 1))
    iql = IQL(GaussianActorCriticValue(2, 1, (16,)))
    critic_loss, value_loss, actor_loss = iql.learn(*batch(rng))
    assert all(np.isfinite(float(x)) for x in (critic_loss, value_loss, actor_loss))
