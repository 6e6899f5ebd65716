"""V-trace against a numpy implementation written from the paper's eq. 1, and by hand."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from parl_algos_impala.vtrace import VTraceReturns, from_importance_weights


def reference_vtrace(
    behaviour_logp, target_logp, discounts, rewards, values, bootstrap, rho_bar, pg_rho_bar
):
    """Eq. 1 of Espeholt et al. (2018) as written there, a sum over t ≥ s (no recursion).

    v_s = V(x_s) + Σ_{t=s}^{T-1} γ^{t-s} (Π_{i=s}^{t-1} c_i) δ_t V, with per-step discounts
    γ_i in place of γ^{t-s}, c_i = min(1, ρ_i), δ_t V = ρ̄_t (r_t + γ_t V(x_{t+1}) - V(x_t)).
    """
    steps, batch = values.shape
    rhos = np.exp(target_logp - behaviour_logp)
    clipped = rhos if rho_bar is None else np.minimum(rho_bar, rhos)
    cs = np.minimum(1.0, rhos)
    next_values = np.concatenate([values[1:], bootstrap[None]])
    deltas = clipped * (rewards + discounts * next_values - values)
    vs = np.empty_like(values)
    for b in range(batch):
        for s in range(steps):
            total = 0.0
            for t in range(s, steps):
                weight = np.prod(discounts[s:t, b] * cs[s:t, b])
                total += weight * deltas[t, b]
            vs[s, b] = values[s, b] + total
    next_vs = np.concatenate([vs[1:], bootstrap[None]])
    pg_rhos = rhos if pg_rho_bar is None else np.minimum(pg_rho_bar, rhos)
    return vs, pg_rhos * (rewards + discounts * next_vs - values)


def random_inputs(rng, steps, batch):
    return {
        # log-probabilities spread widely, so that ρ is often above 1 and clipping matters
        "behaviour_actions_log_probs": np.log(rng.uniform(0.05, 1.0, (steps, batch))),
        "target_actions_log_probs": np.log(rng.uniform(0.05, 1.0, (steps, batch))),
        "discounts": 0.95 * (rng.uniform(size=(steps, batch)) > 0.2),
        "rewards": rng.normal(size=(steps, batch)),
        "values": rng.normal(size=(steps, batch)),
        "bootstrap_value": rng.normal(size=batch),
    }


def as_tensors(inputs):
    return {k: paddle.to_tensor(v.astype("float32")) for k, v in inputs.items()}


@pytest.mark.parametrize(("steps", "batch"), [(1, 1), (5, 3), (20, 8)])
@pytest.mark.parametrize(("rho_bar", "pg_rho_bar"), [(1.0, 1.0), (0.7, 2.0), (None, None)])
def test_matches_the_paper(steps, batch, rho_bar, pg_rho_bar):
    rng = np.random.default_rng(steps * 100 + batch)
    inputs = random_inputs(rng, steps, batch)
    rhos = np.exp(inputs["target_actions_log_probs"] - inputs["behaviour_actions_log_probs"])
    if steps * batch > 10:
        assert (rhos > 1).any() and (rhos < 0.7).any(), "the inputs would not exercise clipping"
    out = from_importance_weights(
        **as_tensors(inputs), clip_rho_threshold=rho_bar, clip_pg_rho_threshold=pg_rho_bar
    )
    assert isinstance(out, VTraceReturns)
    vs, pg = reference_vtrace(*inputs.values(), rho_bar, pg_rho_bar)
    np.testing.assert_allclose(out.vs.numpy(), vs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages.numpy(), pg, rtol=1e-4, atol=1e-5)


def test_clipping_changes_the_result():
    inputs = as_tensors(random_inputs(np.random.default_rng(1), 10, 4))
    clipped = from_importance_weights(**inputs)
    unclipped = from_importance_weights(
        **inputs, clip_rho_threshold=None, clip_pg_rho_threshold=None
    )
    assert not np.allclose(clipped.vs.numpy(), unclipped.vs.numpy())
    assert not np.allclose(clipped.pg_advantages.numpy(), unclipped.pg_advantages.numpy())


def test_hand_worked_on_policy_case():
    # π = μ: ρ = c = 1, so v_s is the n-step return bootstrapped from V(x_T).
    # T = 2, γ = 0.5, r = (1, 2), V = (0, 0), V(x_2) = 4:
    #   v_1 = 2 + 0.5 · 4 = 4;  v_0 = 1 + 0.5 · 4 = 3;
    #   pg_0 = 1 + 0.5 · v_1 - V_0 = 3;  pg_1 = 2 + 0.5 · 4 - 0 = 4.
    zeros = paddle.zeros([2, 1])
    out = from_importance_weights(
        zeros,
        zeros,
        paddle.full([2, 1], 0.5),
        paddle.to_tensor([[1.0], [2.0]]),
        zeros,
        paddle.to_tensor([4.0]),
    )
    np.testing.assert_allclose(out.vs.numpy()[:, 0], [3.0, 4.0])
    np.testing.assert_allclose(out.pg_advantages.numpy()[:, 0], [3.0, 4.0])


def test_hand_worked_off_policy_case_with_clipping():
    # T = 2, γ = 1, r = (1, 1), V = (1, 1), V(x_2) = 1; ρ_0 = 2 (clipped to 1, c_0 = 1),
    # ρ_1 = 0.5 (c_1 = 0.5). δ_1 = 0.5 · (1 + 1 - 1) = 0.5, v_1 = 1 + 0.5 = 1.5.
    # δ_0 = 1 · (1 + 1 - 1) = 1, v_0 = 1 + 1 + 1 · 1 · 0.5 = 2.5.
    # pg_0 = min(1, 2) · (1 + 1.5 - 1) = 1.5;  pg_1 = 0.5 · (1 + 1 - 1) = 0.5.
    behaviour = paddle.to_tensor([[np.log(0.25)], [np.log(0.8)]], dtype="float32")
    target = paddle.to_tensor([[np.log(0.5)], [np.log(0.4)]], dtype="float32")
    ones = paddle.ones([2, 1])
    out = from_importance_weights(behaviour, target, ones, ones, ones, paddle.ones([1]))
    np.testing.assert_allclose(out.vs.numpy()[:, 0], [2.5, 1.5], rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantages.numpy()[:, 0], [1.5, 0.5], rtol=1e-6)


def test_episode_end_cuts_the_bootstrap():
    # γ_0 = 0: step 0 ended an episode, so v_0 = r_0 whatever comes after.
    zeros = paddle.zeros([2, 1])
    discounts = paddle.to_tensor([[0.0], [0.9]])
    rewards = paddle.to_tensor([[1.0], [5.0]])
    out = from_importance_weights(zeros, zeros, discounts, rewards, zeros, paddle.to_tensor([10.0]))
    np.testing.assert_allclose(out.vs.numpy()[:, 0], [1.0, 14.0], rtol=1e-6)


def test_results_carry_no_gradient():
    inputs = as_tensors(random_inputs(np.random.default_rng(2), 4, 2))
    for tensor in inputs.values():
        tensor.stop_gradient = False
    out = from_importance_weights(**inputs)
    assert out.vs.stop_gradient and out.pg_advantages.stop_gradient


def test_bad_shapes_and_thresholds_are_named():
    inputs = as_tensors(random_inputs(np.random.default_rng(3), 4, 2))
    with pytest.raises(ValueError, match=r"rewards has shape \[4, 3\]"):
        from_importance_weights(**{**inputs, "rewards": paddle.zeros([4, 3])})
    with pytest.raises(ValueError, match=r"bootstrap_value must have shape \[2\]"):
        from_importance_weights(**{**inputs, "bootstrap_value": paddle.zeros([4, 2])})
    with pytest.raises(ValueError, match="clip_rho_threshold=0"):
        from_importance_weights(**inputs, clip_rho_threshold=0)
