"""V-trace against a numpy implementation written from the paper's eq. 1, and by hand, on both
frameworks (the same function on paddle and on torch tensors)."""

from __future__ import annotations

from parl.core.ops import ops_of_backend

import numpy as np
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


def as_tensors(backend, inputs):
    return {k: tensor(backend, v) for k, v in inputs.items()}


def tensor(backend, value):
    return ops_of_backend(backend).to_tensor(np.asarray(value, dtype=np.float32))


def numpy(value):
    return np.asarray(value.detach().cpu() if hasattr(value, "cpu") else value)


@pytest.mark.parametrize(("steps", "batch"), [(1, 1), (5, 3), (20, 8)])
@pytest.mark.parametrize(("rho_bar", "pg_rho_bar"), [(1.0, 1.0), (0.7, 2.0), (None, None)])
def test_matches_the_paper(backend, steps, batch, rho_bar, pg_rho_bar):
    rng = np.random.default_rng(steps * 100 + batch)
    inputs = random_inputs(rng, steps, batch)
    rhos = np.exp(inputs["target_actions_log_probs"] - inputs["behaviour_actions_log_probs"])
    if steps * batch > 10:
        assert (rhos > 1).any() and (rhos < 0.7).any(), "the inputs would not exercise clipping"
    out = from_importance_weights(
        **as_tensors(backend, inputs), clip_rho_threshold=rho_bar, clip_pg_rho_threshold=pg_rho_bar
    )
    assert isinstance(out, VTraceReturns)
    vs, pg = reference_vtrace(*inputs.values(), rho_bar, pg_rho_bar)
    np.testing.assert_allclose(numpy(out.vs), vs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(numpy(out.pg_advantages), pg, rtol=1e-4, atol=1e-5)


def test_clipping_changes_the_result(backend):
    inputs = as_tensors(backend, random_inputs(np.random.default_rng(1), 10, 4))
    clipped = from_importance_weights(**inputs)
    unclipped = from_importance_weights(
        **inputs, clip_rho_threshold=None, clip_pg_rho_threshold=None
    )
    assert not np.allclose(numpy(clipped.vs), numpy(unclipped.vs))
    assert not np.allclose(numpy(clipped.pg_advantages), numpy(unclipped.pg_advantages))


def test_hand_worked_on_policy_case(backend):
    # π = μ: ρ = c = 1, so v_s is the n-step return bootstrapped from V(x_T).
    # T = 2, γ = 0.5, r = (1, 2), V = (0, 0), V(x_2) = 4:
    #   v_1 = 2 + 0.5 · 4 = 4;  v_0 = 1 + 0.5 · 4 = 3;
    #   pg_0 = 1 + 0.5 · v_1 - V_0 = 3;  pg_1 = 2 + 0.5 · 4 - 0 = 4.
    zeros = tensor(backend, np.zeros((2, 1)))
    out = from_importance_weights(
        zeros,
        zeros,
        tensor(backend, np.full((2, 1), 0.5)),
        tensor(backend, [[1.0], [2.0]]),
        zeros,
        tensor(backend, [4.0]),
    )
    np.testing.assert_allclose(numpy(out.vs)[:, 0], [3.0, 4.0])
    np.testing.assert_allclose(numpy(out.pg_advantages)[:, 0], [3.0, 4.0])


def test_hand_worked_off_policy_case_with_clipping(backend):
    # T = 2, γ = 1, r = (1, 1), V = (1, 1), V(x_2) = 1; ρ_0 = 2 (clipped to 1, c_0 = 1),
    # ρ_1 = 0.5 (c_1 = 0.5). δ_1 = 0.5 · (1 + 1 - 1) = 0.5, v_1 = 1 + 0.5 = 1.5.
    # δ_0 = 1 · (1 + 1 - 1) = 1, v_0 = 1 + 1 + 1 · 1 · 0.5 = 2.5.
    # pg_0 = min(1, 2) · (1 + 1.5 - 1) = 1.5;  pg_1 = 0.5 · (1 + 1 - 1) = 0.5.
    behaviour = tensor(backend, [[np.log(0.25)], [np.log(0.8)]])
    target = tensor(backend, [[np.log(0.5)], [np.log(0.4)]])
    ones = tensor(backend, np.ones((2, 1)))
    out = from_importance_weights(behaviour, target, ones, ones, ones, tensor(backend, [1.0]))
    np.testing.assert_allclose(numpy(out.vs)[:, 0], [2.5, 1.5], rtol=1e-6)
    np.testing.assert_allclose(numpy(out.pg_advantages)[:, 0], [1.5, 0.5], rtol=1e-6)


def test_episode_end_cuts_the_bootstrap(backend):
    # γ_0 = 0: step 0 ended an episode, so v_0 = r_0 whatever comes after.
    zeros = tensor(backend, np.zeros((2, 1)))
    discounts = tensor(backend, [[0.0], [0.9]])
    rewards = tensor(backend, [[1.0], [5.0]])
    bootstrap = tensor(backend, [10.0])
    out = from_importance_weights(zeros, zeros, discounts, rewards, zeros, bootstrap)
    np.testing.assert_allclose(numpy(out.vs)[:, 0], [1.0, 14.0], rtol=1e-6)


def test_results_carry_no_gradient(backend):
    inputs = as_tensors(backend, random_inputs(np.random.default_rng(2), 4, 2))
    for value in inputs.values():
        if backend == "paddle":
            value.stop_gradient = False
        else:
            value.requires_grad_()
    out = from_importance_weights(**inputs)
    for result in out:
        assert result.stop_gradient if backend == "paddle" else not result.requires_grad


def test_bad_shapes_and_thresholds_are_named(backend):
    inputs = as_tensors(backend, random_inputs(np.random.default_rng(3), 4, 2))
    with pytest.raises(ValueError, match=r"rewards has shape \[4, 3\]"):
        from_importance_weights(**{**inputs, "rewards": tensor(backend, np.zeros((4, 3)))})
    with pytest.raises(ValueError, match=r"bootstrap_value must have shape \[2\]"):
        from_importance_weights(**{**inputs, "bootstrap_value": tensor(backend, np.zeros((4, 2)))})
    with pytest.raises(ValueError, match="clip_rho_threshold=0"):
        from_importance_weights(**inputs, clip_rho_threshold=0)
