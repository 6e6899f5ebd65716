"""The ops the actor-critic family added: paddle and torch give the same numbers."""

from __future__ import annotations

import math

import parl
from parl.core.ops import ops_of_backend

import numpy as np
import pytest

pytest.importorskip("paddle")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

BACKENDS = ("paddle", "torch")
RNG = np.random.default_rng(0)


def _both(array: np.ndarray) -> dict[str, object]:
    return {name: ops_of_backend(name).to_tensor(array) for name in BACKENDS}


def _numpy(name: str, tensor: object) -> np.ndarray:
    return np.asarray(ops_of_backend(name).to_numpy(tensor))


def test_linear_draws_within_its_bounds_and_zeroes_a_missing_bias_bound() -> None:
    for name in BACKENDS:
        parl.set_seed(0, backend=name)
        layer = ops_of_backend(name).linear(64, 32, weight_bound=0.1)
        weight, bias = (_numpy(name, p.detach()) for p in (layer.weight, layer.bias))
        assert np.abs(weight).max() <= 0.1 and weight.std() > 0.04  # U(-0.1, 0.1): std 0.058
        assert not bias.any()
        both = ops_of_backend(name).linear(64, 32, 0.1, 0.2)
        assert 0.1 < np.abs(_numpy(name, both.bias.detach())).max() <= 0.2
        xavier = _numpy(name, ops_of_backend(name).linear(64, 32).weight.detach())
        assert np.abs(xavier).max() <= math.sqrt(6 / 96) and xavier.std() > 0.1


def test_uniform_and_scalar_parameters() -> None:
    for name in BACKENDS:
        ops = ops_of_backend(name)
        stacked = ops.uniform_parameter([2, 8, 4], 0.5)
        assert list(stacked.shape) == [2, 8, 4]
        assert np.abs(_numpy(name, stacked.detach())).max() <= 0.5
        scalar = ops.scalar_parameter(0.25, "cpu")
        assert list(scalar.shape) == [] and float(scalar.detach()) == 0.25
        optimizer = ops.adam([scalar], lr=0.1)
        ops.step(optimizer, scalar * 2.0)
        assert float(scalar.detach()) == pytest.approx(0.15)
        frozen = ops.scalar_parameter(1.0, "cpu", trainable=False)
        assert getattr(frozen, "stop_gradient", not getattr(frozen, "requires_grad", True))


def test_batched_linear_and_logsumexp_agree() -> None:
    x, w, b = RNG.normal(size=(5, 3)), RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 1, 4))
    expected = np.einsum("bi,kio->kbo", x, w) + b
    for name in BACKENDS:
        ops = ops_of_backend(name)
        tensors = [ops.to_tensor(a.astype(np.float32)) for a in (x, w, b)]
        got = _numpy(name, ops.batched_linear(*tensors))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        stacked = ops.to_tensor(expected.astype(np.float32))
        again = _numpy(name, ops.batched_linear(stacked[:, :, :3], *tensors[1:]))
        np.testing.assert_allclose(again, expected[:, :, :3] @ w + b, rtol=1e-4, atol=1e-4)
        top = expected.max(-1, keepdims=True)
        lse = (top + np.log(np.exp(expected - top).sum(-1, keepdims=True)))[..., 0]
        np.testing.assert_allclose(_numpy(name, ops.logsumexp(stacked, -1)), lse, rtol=1e-5)


def test_grad_of_a_leaf_and_no_grad_of_parameters() -> None:
    values = RNG.normal(size=(4, 2)).astype(np.float32)
    for name, tensor in _both(values).items():
        ops = ops_of_backend(name)
        leaf = ops.grad_leaf(tensor)
        weight = ops.scalar_parameter(3.0, "cpu")
        with ops.no_grad_of([weight]):
            output = ops.sum((leaf * weight).square())
        np.testing.assert_allclose(_numpy(name, ops.grad(output, leaf)), 18.0 * values, rtol=1e-5)
        # The parameter took no gradient inside the block, and is trainable again after it.
        assert getattr(weight, "grad", None) is None
        assert not getattr(weight, "stop_gradient", False)
        assert getattr(weight, "requires_grad", True)


def test_set_lr_changes_the_next_step() -> None:
    for name in BACKENDS:
        ops = ops_of_backend(name)
        scalar = ops.scalar_parameter(1.0, "cpu")
        optimizer = ops.adam([scalar], lr=0.1)
        ops.set_lr(optimizer, 0.01)
        ops.step(optimizer, scalar * 1.0)
        assert float(scalar.detach()) == pytest.approx(0.99)
