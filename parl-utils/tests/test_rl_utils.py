from __future__ import annotations

from parl.utils import bootstrap_truncated, calc_discount_sum_rewards, calc_gae, compute_gae

import numpy as np
import pytest


def loop_gae(rewards, values, dones, last_values, last_dones, gamma, lam):
    """CleanRL's PPO loop, written out as the reference."""
    steps = len(rewards)
    advantages = np.zeros_like(rewards)
    lastgaelam = 0
    for t in reversed(range(steps)):
        if t == steps - 1:
            nextnonterminal = 1.0 - last_dones
            nextvalues = last_values
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * lam * nextnonterminal * lastgaelam
    return advantages, advantages + values


def test_discount_sum_rewards() -> None:
    np.testing.assert_allclose(calc_discount_sum_rewards([1, 1, 1], 0.5), [1.75, 1.5, 1.0])


def test_calc_gae_matches_loop() -> None:
    rng = np.random.default_rng(0)
    rewards, values = rng.normal(size=7), rng.normal(size=7)
    expected, _ = loop_gae(rewards, values, np.zeros(7), 0.3, 0.0, 0.99, 0.95)
    np.testing.assert_allclose(calc_gae(rewards, values, 0.3, 0.99, 0.95), expected, rtol=1e-6)


def test_compute_gae_matches_loop_with_episode_boundaries() -> None:
    rng = np.random.default_rng(1)
    steps, envs = 16, 4
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    values = rng.normal(size=(steps, envs)).astype(np.float32)
    dones = (rng.random((steps, envs)) < 0.2).astype(np.float32)
    last_values = rng.normal(size=envs).astype(np.float32)
    last_dones = np.array([0, 1, 0, 1], dtype=np.float32)
    advantages, returns = compute_gae(
        rewards, values, dones.astype(bool), last_values, last_dones, 0.99, 0.95
    )
    expected_adv, expected_ret = loop_gae(
        rewards, values, dones, last_values, last_dones, 0.99, 0.95
    )
    assert advantages.shape == returns.shape == (steps, envs)
    assert advantages.dtype == np.float32
    np.testing.assert_allclose(advantages, expected_adv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(returns, expected_ret, rtol=1e-5, atol=1e-6)


def test_compute_gae_cuts_at_episode_start() -> None:
    # obs[2] starts a new episode, so step 1 is terminal: its advantage ignores later steps.
    advantages, _ = compute_gae(
        rewards=[1.0, 1.0, 100.0],
        values=[0.0, 0.0, 0.0],
        dones=[0, 0, 1],
        last_values=0.0,
        last_dones=0,
        gamma=1.0,
        lam=1.0,
    )
    np.testing.assert_allclose(advantages, [2.0, 1.0, 100.0])


def test_bootstrap_truncated_only_where_truncated_and_not_terminated() -> None:
    rewards = np.array([[1.0, 1.0, 1.0]])
    fixed = bootstrap_truncated(
        rewards,
        terminations=[[0, 1, 0]],
        truncations=[[1, 1, 0]],
        final_values=[[10.0, 10.0, 10.0]],
        gamma=0.5,
    )
    np.testing.assert_allclose(fixed, [[6.0, 1.0, 1.0]])
    np.testing.assert_allclose(rewards, [[1.0, 1.0, 1.0]])


def test_shape_errors() -> None:
    z32, z2, z3 = np.zeros((3, 2)), np.zeros(2), np.zeros(3)
    with pytest.raises(ValueError, match=r"dones must have the shape of rewards \(3, 2\)"):
        compute_gae(z32, z32, np.zeros((3, 1)), z2, z2, 0.9, 0.9)
    with pytest.raises(ValueError, match=r"last_values must have shape \(2,\)"):
        compute_gae(z32, z32, z32, z3, z2, 0.9, 0.9)
    with pytest.raises(ValueError, match="same length"):
        calc_gae([1.0, 2.0], [0.0], 0.0, 0.9, 0.9)
    with pytest.raises(ValueError, match=r"must be 1-D .* use compute_gae"):
        calc_discount_sum_rewards(np.zeros((2, 2)), 0.9)
    with pytest.raises(ValueError, match="final_values must have the shape"):
        bootstrap_truncated(z3, z3, z3, z2, 0.9)
    with pytest.raises(TypeError, match="rewards must be numeric"):
        calc_discount_sum_rewards(["a"], 0.9)
