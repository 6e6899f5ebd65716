"""Action distributions against their formulas written in numpy, for batches of any shape."""

from __future__ import annotations

import math

from parl.core.distributions import Categorical, DiagGaussian, Distribution, TanhGaussian

import numpy as np
import paddle
import pytest

RNG = np.random.default_rng(0)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _gaussian_log_prob(x, mean, std):
    return (-0.5 * ((x - mean) / std) ** 2 - np.log(std) - 0.5 * math.log(2 * math.pi)).sum(-1)


@pytest.mark.parametrize("batch", [[], [5], [3, 4]])
def test_categorical_matches_numpy(batch: list[int]) -> None:
    logits = RNG.normal(size=[*batch, 4]).astype(np.float32)
    other = RNG.normal(size=[*batch, 4]).astype(np.float32)
    dist = Categorical(paddle.to_tensor(logits))
    assert dist.batch_shape == batch
    actions = RNG.integers(0, 4, size=batch)
    log_p, log_q = _log_softmax(logits), _log_softmax(other)
    expected = np.take_along_axis(log_p, actions[..., None], -1)[..., 0]
    np.testing.assert_allclose(dist.log_prob(paddle.to_tensor(actions)).numpy(), expected, 1e-5)
    np.testing.assert_allclose(dist.entropy().numpy(), -(np.exp(log_p) * log_p).sum(-1), 1e-5)
    kl = (np.exp(log_p) * (log_p - log_q)).sum(-1)
    np.testing.assert_allclose(dist.kl(Categorical(paddle.to_tensor(other))).numpy(), kl, 1e-5)
    np.testing.assert_array_equal(dist.mode().numpy(), logits.argmax(-1))
    assert list(dist.sample().shape) == batch


def test_categorical_log_probs_stay_finite_for_extreme_logits() -> None:
    dist = Categorical(paddle.to_tensor([[1000.0, -1000.0]]))
    log_prob = dist.log_prob(paddle.to_tensor([1])).numpy()
    # paddle's CPU log_softmax floors log-probabilities at -64 (a probability of 1.6e-28).
    assert np.isfinite(log_prob).all() and log_prob[0] <= -60.0


def test_categorical_samples_follow_the_probabilities() -> None:
    paddle.seed(0)
    probs = np.array([0.1, 0.6, 0.3], dtype=np.float32)
    logits = paddle.to_tensor(np.log(np.tile(probs, (20_000, 1))))
    counts = np.bincount(Categorical(logits).sample().numpy(), minlength=3) / 20_000
    np.testing.assert_allclose(counts, probs, atol=0.015)


def test_categorical_checks_action_shape_and_has_no_rsample() -> None:
    dist = Categorical(paddle.zeros([5, 3]))
    with pytest.raises(ValueError, match=r"shape \[5, 1\], expected the batch shape \[5\]"):
        dist.log_prob(paddle.zeros([5, 1], "int64"))
    with pytest.raises(NotImplementedError, match="no reparameterised sample"):
        dist.rsample()
    with pytest.raises(TypeError, match="another Categorical"):
        dist.kl(DiagGaussian(paddle.zeros([5, 3]), paddle.ones([3])))


@pytest.mark.parametrize("std_shape", [[5, 2], [1, 2], [2]])
def test_diag_gaussian_matches_numpy_and_broadcasts_std(std_shape: list[int]) -> None:
    mean = RNG.normal(size=(5, 2)).astype(np.float32)
    std = np.exp(RNG.normal(size=std_shape)).astype(np.float32)
    mean2, std2 = mean + 0.3, np.full((5, 2), 0.7, np.float32)
    dist = DiagGaussian(paddle.to_tensor(mean), paddle.to_tensor(std))
    assert dist.batch_shape == [5]
    x = RNG.normal(size=(5, 2)).astype(np.float32)
    full_std = np.broadcast_to(std, mean.shape)
    np.testing.assert_allclose(
        dist.log_prob(paddle.to_tensor(x)).numpy(), _gaussian_log_prob(x, mean, full_std), 1e-5
    )
    entropy = (0.5 + 0.5 * math.log(2 * math.pi) + np.log(full_std)).sum(-1)
    np.testing.assert_allclose(dist.entropy().numpy(), entropy, 1e-5)
    kl = (np.log(std2 / full_std) + (full_std**2 + (mean - mean2) ** 2) / (2 * std2**2) - 0.5).sum(
        -1
    )
    other = DiagGaussian(paddle.to_tensor(mean2), paddle.to_tensor(std2))
    np.testing.assert_allclose(dist.kl(other).numpy(), kl, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(dist.mode().numpy(), mean)


def test_diag_gaussian_of_one_observation_with_a_row_std_is_one_action() -> None:
    dist = DiagGaussian(paddle.zeros([3]), paddle.ones([1, 3]))
    assert dist.batch_shape == [] and dist.sample().shape == [3]


def test_diag_gaussian_rsample_carries_gradients_and_sample_does_not() -> None:
    mean = paddle.zeros([64, 3])
    mean.stop_gradient = False
    dist = DiagGaussian.from_log_std(mean, paddle.zeros([3]))
    dist.rsample().sum().backward()
    np.testing.assert_allclose(mean.grad.numpy(), np.ones((64, 3)))
    assert dist.sample().stop_gradient


@pytest.mark.parametrize("std_shape", [[3], [5, 1, 2], [2, 2]])
def test_diag_gaussian_refuses_a_std_that_does_not_broadcast_to_the_mean(std_shape) -> None:
    with pytest.raises(ValueError, match=r"does not broadcast to the mean's shape \[5, 2\]"):
        DiagGaussian(paddle.zeros([5, 2]), paddle.ones(std_shape))
    with pytest.raises(ValueError, match="does not broadcast"):
        DiagGaussian(paddle.zeros([5, 1]), paddle.ones([3]))  # would silently give 3 actions


def test_tanh_gaussian_log_prob_has_the_log_det_correction() -> None:
    mean = RNG.normal(size=(6, 2)).astype(np.float32)
    std = np.full((6, 2), 0.5, np.float32)
    dist = TanhGaussian(paddle.to_tensor(mean), paddle.to_tensor(std))
    action, log_prob = dist.rsample_with_log_prob()
    x = np.arctanh(action.numpy().astype(np.float64))
    expected = _gaussian_log_prob(x, mean, std) - np.log(1 - np.tanh(x) ** 2).sum(-1)
    np.testing.assert_allclose(log_prob.numpy(), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dist.log_prob(action).numpy(), expected, rtol=1e-3, atol=1e-3)
    assert np.abs(action.numpy()).max() < 1.0
    np.testing.assert_allclose(dist.mode().numpy(), np.tanh(mean), rtol=1e-6)


def test_tanh_gaussian_is_finite_where_tanh_saturates() -> None:
    mean = paddle.full([4, 1], 30.0)
    mean.stop_gradient = False
    _, log_prob = TanhGaussian(mean, paddle.full([1], 0.1)).rsample_with_log_prob()
    log_prob.sum().backward()
    assert np.isfinite(log_prob.numpy()).all() and np.isfinite(mean.grad.numpy()).all()


def test_tanh_gaussian_kl_is_the_gaussians_and_entropy_says_why_not() -> None:
    first = TanhGaussian(paddle.zeros([3, 2]), paddle.ones([2]))
    second = TanhGaussian(paddle.ones([3, 2]), paddle.full([2], 2.0))
    np.testing.assert_allclose(first.kl(second).numpy(), first.base.kl(second.base).numpy())
    with pytest.raises(NotImplementedError, match="no closed form"):
        first.entropy()


def test_distribution_is_an_interface() -> None:
    with pytest.raises(TypeError, match="abstract"):
        Distribution()  # type: ignore[abstract]


def test_gumbel_softmax_sample_is_a_relaxed_one_hot_with_gradients() -> None:
    from parl.core.distributions import GumbelSoftmax

    paddle.seed(0)
    logits = paddle.to_tensor([[3.0, 0.0, -1.0]] * 4000, stop_gradient=False)
    dist = GumbelSoftmax(logits, temperature=0.5)
    sample = dist.rsample()
    np.testing.assert_allclose(sample.sum(-1).numpy(), 1.0, rtol=1e-5)
    # The argmax of a Gumbel-perturbed logit vector follows softmax(logits).
    counts = np.bincount(sample.numpy().argmax(-1), minlength=3) / 4000
    np.testing.assert_allclose(counts, np.exp(_log_softmax(np.array([3.0, 0.0, -1.0]))), atol=0.03)
    sample[:, 0].sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0
    assert dist.mode()[0].tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="temperature > 0, got 0"):
        GumbelSoftmax(logits, temperature=0)
