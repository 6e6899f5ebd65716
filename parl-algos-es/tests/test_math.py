"""Centred ranks, the flat optimizers, merged observation statistics and the ES step, each
against a computation written out in numpy."""

from __future__ import annotations

import parl
from parl.testing import LinearModel

import numpy as np
import pytest

from parl_algos_es import (
    ES,
    SGD,
    Adam,
    Momentum,
    ObservationMoments,
    ObservationStats,
    SamplingRecord,
    centered_ranks,
    make_optimizer,
)

# -- centred ranks ---------------------------------------------------------------------------


def test_centered_ranks_by_hand():
    returns = np.array([[5.0, -2.0], [0.0, 9.0], [3.0, 1.0]])
    # sorted: -2 (0), 0 (1), 1 (2), 3 (3), 5 (4), 9 (5); rank / 5 - 0.5
    expected = np.array([[4, 0], [1, 5], [3, 2]]) / 5 - 0.5
    np.testing.assert_allclose(centered_ranks(returns), expected, rtol=1e-6)


def test_centered_ranks_ignore_scale_and_share_ties():
    returns = np.array([1.0, 1e6, -3.0, 1.0])
    np.testing.assert_allclose(
        centered_ranks(returns), centered_ranks(np.array([2.0, 3.0, 0.0, 2.0])), rtol=1e-6
    )
    np.testing.assert_allclose(centered_ranks(returns), [-0.0, 0.5, -0.5, 0.0], atol=1e-7)


@pytest.mark.parametrize(
    ("values", "match"), [([1.0], "at least two values"), ([1.0, np.nan], "NaN or infinite")]
)
def test_centered_ranks_bad_input(values, match):
    with pytest.raises(ValueError, match=match):
        centered_ranks(values)


# -- optimizers ------------------------------------------------------------------------------

GRADS = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
START = np.array([0.5, -1.0, 2.0], dtype=np.float32)


def _run(optimizer, grads=GRADS, params=START):
    for grad in grads:
        params = optimizer.step(params, grad)
    return params


def test_sgd_by_hand():
    np.testing.assert_allclose(_run(SGD(3, 0.1)), START - 0.1 * GRADS.sum(0), rtol=1e-6)


def test_momentum_by_hand():
    velocity, params = np.zeros(3), START.astype(np.float64)
    for grad in GRADS:
        velocity = 0.8 * velocity + 0.2 * grad
        params = params - 0.05 * velocity
    np.testing.assert_allclose(_run(Momentum(3, 0.05, momentum=0.8)), params, rtol=1e-5)


def test_adam_by_hand():
    m, v, params = np.zeros(3), np.zeros(3), START.astype(np.float64)
    for t, grad in enumerate(GRADS, start=1):
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        m_hat, v_hat = m / (1 - 0.9**t), v / (1 - 0.999**t)
        params = params - 0.01 * m_hat / (np.sqrt(v_hat) + 1e-8)
    np.testing.assert_allclose(_run(Adam(3, 0.01)), params, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["sgd", "momentum", "adam"])
def test_saved_state_continues_the_same_way(name):
    first = make_optimizer(name, 3, 0.01)
    middle = _run(first, GRADS[:2])
    slots, steps = first.state()
    second = make_optimizer(name, 3, 0.01)
    second.load_state(slots, steps)
    np.testing.assert_array_equal(_run(first, GRADS[2:], middle), _run(second, GRADS[2:], middle))
    assert steps == 2


def test_optimizer_bad_input():
    adam = Adam(3, 0.01)
    with pytest.raises(ValueError, match=r"grad must have shape \(3,\), got \(4,\)"):
        adam.step(START, np.zeros(4))
    with pytest.raises(ValueError, match=r"holds \['m', 'v'\], got \['velocity'\]"):
        adam.load_state({"velocity": np.zeros(3)}, 1)
    with pytest.raises(ValueError, match=r"slot 'm' must have shape \(3,\)"):
        adam.load_state({"m": np.zeros(2), "v": np.zeros(3)}, 1)
    with pytest.raises(ValueError, match="unknown optimizer 'rmsprop'"):
        make_optimizer("rmsprop", 3, 0.01)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="stepsize must be > 0"):
        SGD(3, 0.0)
    assert adam.steps == 0, "a refused call changed the state"


# -- observation statistics ------------------------------------------------------------------


def test_merged_moments_equal_the_statistics_of_all_observations():
    rng = np.random.default_rng(1)
    batches = [rng.normal(loc=3.0, scale=2.0, size=(n, 2)) for n in (5, 40, 17)]
    learner = ObservationStats((2,))
    for batch in batches:  # one actor each
        actor = ObservationStats((2,))
        actor.update(batch)
        learner.merge(actor.moments())
    everything = np.concatenate(batches)
    merged = learner.moments()
    np.testing.assert_allclose(merged.mean, everything.mean(0), rtol=1e-12)
    np.testing.assert_allclose(merged.var, everything.var(0), rtol=1e-12)
    assert merged.count == len(everything)
    expected = (everything[:3] - everything.mean(0)) / everything.std(0)
    np.testing.assert_allclose(learner.normalize(everything[:3]), expected, rtol=1e-5)


def test_normalize_floors_the_std_and_starts_as_identity():
    stats = ObservationStats((2,), min_std=0.5, clip=1.0)
    np.testing.assert_array_equal(stats.normalize([[4.0, -4.0]]), [[4.0, -4.0]])
    stats.update(np.array([[1.0, 0.0], [1.0, 0.2]]))  # first feature constant
    np.testing.assert_allclose(stats.normalize([[1.2, 0.1]]), [[0.4, 0.0]], atol=1e-6)
    np.testing.assert_allclose(stats.normalize([[9.0, 9.0]]), [[1.0, 1.0]])
    with pytest.raises(ValueError, match=r"must end in shape \(2,\)"):
        stats.update(np.zeros((3, 5)))


@pytest.mark.parametrize(
    ("mean", "var", "count", "match"),
    [
        ([0.0, np.nan], [1.0, 1.0], 3.0, "must be finite"),
        ([0.0, 0.0], [1.0, -1.0], 3.0, "var must be >= 0"),
        ([0.0, 0.0], [1.0, 1.0], -1.0, "count must be a finite number >= 0"),
        ([0.0], [1.0], 3.0, r"shape \(1,\) cannot merge into statistics of shape \(2,\)"),
        # beyond what float32 observations can have: merged, 1e308 became inf and NaN
        ([1e308, 0.0], [1.0, 1.0], 3.0, "mean must lie within float32's range"),
        ([0.0, 0.0], [1.0, 1e300], 3.0, "var must be >= 0 and at most"),
    ],
)
def test_bad_moments_are_refused_and_change_nothing(mean, var, count, match):
    stats = ObservationStats((2,))
    stats.update(np.array([[1.0, 2.0], [3.0, 5.0]]))
    before = stats.moments()
    with pytest.raises(ValueError, match=match):
        stats.merge(ObservationMoments(np.array(mean), np.array(var), count))
    after = stats.moments()
    assert after.count == before.count
    np.testing.assert_array_equal(after.var, before.var)


# -- the ES step -----------------------------------------------------------------------------


def _es(**options):
    parl.set_seed(0)
    return ES(LinearModel(3, 2), seed=0, noise_table_size=5_000, **options)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_es_step_by_hand(optimizer):
    alg = _es(optimizer=optimizer, stepsize=0.05, l2_coeff=0.01, noise_stdev=0.02)
    theta, dim = alg.flat.get().astype(np.float64), alg.flat.size
    indices = np.array([10, 400, 2_000])
    rewards = np.array([[1.0, 3.0], [7.0, 2.0], [0.0, 5.0]])
    # ranks of 1, 3, 7, 2, 0, 5 among six: 1, 3, 5, 2, 0, 4 → / 5 − 0.5
    shaped = np.array([[1, 3], [5, 2], [0, 4]]) / 5 - 0.5
    noise = np.stack([alg.noise.noise[i : i + dim] for i in indices]).astype(np.float64)
    grad = ((shaped[:, 0] - shaped[:, 1]) @ noise) / 6
    descent = -grad + 0.01 * theta
    if optimizer == "sgd":
        expected = theta - 0.05 * descent
    else:  # Adam's first step: m̂ = g, v̂ = g², so the step is α·g/(|g| + ε)
        expected = theta - 0.05 * descent / (np.abs(descent) + 1e-8)
    stats = alg.learn(indices, rewards)
    np.testing.assert_allclose(alg.flat.get(), expected, rtol=1e-5, atol=1e-6)
    assert stats["grad_norm"] == pytest.approx(np.linalg.norm(grad), rel=1e-5)


def test_es_candidates_and_tell_match_learn():
    alg, twin = _es(), _es()
    records = alg.ask(6)
    assert [r.sign for r in records] == [1, -1] * 3
    assert len({r.key for r in records}) == 3
    theta, record = alg.flat.get(), records[1]
    np.testing.assert_allclose(
        alg.candidate(record), theta - 0.02 * alg.noise.get(record.key, alg.flat.size)
    )
    returns = np.array([3.0, 1.0, 0.0, 2.0, 5.0, 4.0])
    shuffled = [4, 1, 0, 5, 3, 2]  # tell pairs records up whatever their order
    alg.tell([records[i] for i in shuffled], returns[shuffled])
    twin.learn([r.key for r in records[::2]], returns.reshape(3, 2))
    np.testing.assert_array_equal(alg.flat.get(), twin.flat.get())


def test_es_refuses_an_unpaired_record_before_changing_anything():
    alg = _es()
    before = alg.flat.get()
    with pytest.raises(ValueError, match=r"noise indices \[7\] lack"):
        alg.tell([SamplingRecord(3, 1), SamplingRecord(3, -1), SamplingRecord(7, -1)], [1, 2, 3])
    np.testing.assert_array_equal(alg.flat.get(), before)
    assert alg.optimizer.steps == 0
