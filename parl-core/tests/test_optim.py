"""clip_grad_norm_ against the global-norm definition (and paddle's own clipper)."""

from __future__ import annotations

from parl.core.paddle.optim import clip_grad_norm_

import numpy as np
import paddle
import pytest


def grads_of(model: paddle.nn.Layer, scale: float) -> list[np.ndarray]:
    model.clear_gradients()
    (model(paddle.ones([4, 3])) * scale).sum().backward()
    return [p.grad.numpy().copy() for p in model.parameters()]


@pytest.fixture
def model() -> paddle.nn.Layer:
    paddle.seed(0)
    return paddle.nn.Sequential(paddle.nn.Linear(3, 8), paddle.nn.Tanh(), paddle.nn.Linear(8, 2))


def test_large_gradients_are_scaled_to_max_norm(model: paddle.nn.Layer) -> None:
    before = grads_of(model, scale=100.0)
    norm = np.sqrt(sum((g**2).sum() for g in before))
    returned = clip_grad_norm_(model.parameters(), max_norm=0.5)
    assert np.isclose(float(returned), norm, rtol=1e-5)
    after = [p.grad.numpy() for p in model.parameters()]
    for old, new in zip(before, after, strict=True):
        np.testing.assert_allclose(new, old * 0.5 / (norm + 1e-6), rtol=1e-5)


def test_small_gradients_are_left_alone(model: paddle.nn.Layer) -> None:
    before = grads_of(model, scale=1e-3)
    clip_grad_norm_(model.parameters(), max_norm=10.0)
    for old, param in zip(before, model.parameters(), strict=True):
        np.testing.assert_array_equal(param.grad.numpy(), old)


def test_matches_paddles_global_norm_clipper(model: paddle.nn.Layer) -> None:
    grads_of(model, scale=50.0)
    expected = paddle.nn.ClipGradByGlobalNorm(1.0)([(p, p.grad) for p in model.parameters()])
    clip_grad_norm_(model.parameters(), max_norm=1.0)
    for (_, want), param in zip(expected, model.parameters(), strict=True):
        np.testing.assert_allclose(param.grad.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)


def test_bad_max_norm_and_no_gradients() -> None:
    layer = paddle.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="max_norm must be > 0, got 0"):
        clip_grad_norm_(layer.parameters(), max_norm=0)
    assert float(clip_grad_norm_(layer.parameters(), max_norm=1.0)) == 0.0
