"""The ops the pg family added (``take_rows``, ``adam_with_eps``, ``set_lr``,
``orthogonal_linear``, ``full_parameter``): paddle and torch give the same numbers."""

from __future__ import annotations

from parl.core.neutral import Model
from parl.core.ops import ops_of_backend

import numpy as np
import pytest

torch = pytest.importorskip("torch")
paddle = pytest.importorskip("paddle")
pytestmark = pytest.mark.torch

BACKENDS = ("paddle", "torch")
RNG = np.random.default_rng(0)


def _numpy(ops, tensor) -> np.ndarray:
    return np.asarray(ops.to_numpy(tensor.detach() if hasattr(tensor, "detach") else tensor))


def test_take_rows_gathers_the_same_rows() -> None:
    x = RNG.normal(size=(6, 3)).astype(np.float32)
    index = np.array([4, 0, 4, 2])
    for name in BACKENDS:
        ops = ops_of_backend(name)
        rows = ops.take_rows(ops.to_tensor(x), ops.to_tensor(index, "int64"))
        np.testing.assert_array_equal(ops.to_numpy(rows), x[index])


def _adam_steps(name: str, eps: float, rates: list[float | None]) -> np.ndarray:
    """A 3-vector parameter after one Adam step per rate on ``sum(w * g)``; None: no set_lr."""
    ops = ops_of_backend(name)
    weight = ops.full_parameter([3], 0.0)
    optimizer = ops.adam_with_eps([weight], lr=0.1, eps=eps)
    gradient = ops.to_tensor(np.array([1e-3, -2.0, 0.5], np.float32))
    for rate in rates:
        if rate is not None:
            ops.set_lr(optimizer, rate)
        ops.step(optimizer, (weight * gradient).sum(), [weight])
    return _numpy(ops, weight)


@pytest.mark.parametrize("eps", [1e-8, 1.0])
def test_adam_with_eps_steps_alike_and_eps_weighs(eps: float) -> None:
    steps = {name: _adam_steps(name, eps, [None]) for name in BACKENDS}
    np.testing.assert_allclose(steps["paddle"], steps["torch"], rtol=1e-6, atol=1e-9)
    # Adam's first step is lr * g / (|g| + eps): a large eps shrinks the small gradient's step.
    expected = -0.1 * np.array([1e-3, -2.0, 0.5]) / (np.abs([1e-3, -2.0, 0.5]) + eps)
    np.testing.assert_allclose(steps["torch"], expected, rtol=1e-4)


def test_set_lr_sets_the_rate_of_later_steps() -> None:
    steps = {name: _adam_steps(name, 1e-8, [None, 0.01]) for name in BACKENDS}
    np.testing.assert_allclose(steps["paddle"], steps["torch"], rtol=1e-6)
    kept = _adam_steps("torch", 1e-8, [None, None])
    # The second step of a constant gradient moves by lr · sign(g): 0.01 instead of 0.1.
    np.testing.assert_allclose(
        steps["torch"] - _adam_steps("torch", 1e-8, [None]),
        -0.01 * np.sign([1e-3, -2.0, 0.5]),
        rtol=1e-4,
    )
    assert not np.allclose(kept, steps["torch"])


@pytest.mark.parametrize(("shape", "gain"), [((5, 5), 2.0), ((3, 7), 0.01), ((8, 2), np.sqrt(2))])
def test_orthogonal_linear_is_orthogonal_times_gain_with_zero_bias(shape, gain) -> None:
    in_dim, out_dim = shape
    for name in BACKENDS:
        layer = ops_of_backend(name).orthogonal_linear(in_dim, out_dim, gain)
        weight = _numpy(ops_of_backend(name), layer.weight)
        weight = weight if name == "paddle" else weight.T  # paddle's layout: [in, out]
        assert weight.shape == shape
        small = min(shape)
        gram = weight.T @ weight if in_dim >= out_dim else weight @ weight.T
        np.testing.assert_allclose(gram, gain**2 * np.eye(small), atol=1e-5 * max(1.0, gain**2))
        np.testing.assert_array_equal(_numpy(ops_of_backend(name), layer.bias), np.zeros(out_dim))


class WithStd(Model):
    def __init__(self, *, backend=None) -> None:
        super().__init__()
        self.log_std = self.ops.full_parameter([1, 2], -0.5)


def test_full_parameter_is_a_trainable_weight_of_its_model() -> None:
    for name in BACKENDS:
        model = WithStd(backend=name)
        np.testing.assert_array_equal(model.get_weights()["log_std"], np.full((1, 2), -0.5))
        assert len(list(model.parameters())) == 1
        assert model.get_weights()["log_std"].dtype == np.float32
