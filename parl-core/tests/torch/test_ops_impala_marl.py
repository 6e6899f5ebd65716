"""The ops added for the IMPALA and multi-agent families give the same numbers on paddle and
torch (parl.core.paddle.ops and parl.core.torch.ops, same names, same meaning)."""

from __future__ import annotations

from parl.core.ops import ops_of_backend

import numpy as np
import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")
pytest.importorskip("paddle")

BOTH = ("paddle", "torch")


def _numpy(value):
    return np.asarray(value.detach().cpu() if hasattr(value, "cpu") else value)


def test_set_lr_and_get_lr():
    for name in BOTH:
        ops = ops_of_backend(name)
        model = ops.nn.Linear(2, 2)
        optimizer = ops.adam(model.parameters(), lr=0.1)
        assert ops.get_lr(optimizer) == pytest.approx(0.1)
        ops.set_lr(optimizer, 0.025)
        assert ops.get_lr(optimizer) == 0.025


def test_conv2d_and_max_pool2d_layers_compute_alike():
    images = np.random.default_rng(0).normal(size=(2, 3, 8, 8)).astype(np.float32)
    outputs = {}
    for name in BOTH:
        ops = ops_of_backend(name)
        conv, pool = ops.conv2d_layer(3, 4, 3, stride=1, padding=1), ops.max_pool2d_layer(2)
        weight = np.random.default_rng(1).normal(size=(4, 3, 3, 3)).astype(np.float32)
        layers = ops.nn.Sequential(conv, pool)
        _set(name, conv, weight, np.arange(4, dtype=np.float32))
        outputs[name] = _numpy(layers(ops.to_tensor(images)))
    assert outputs["paddle"].shape == (2, 4, 4, 4)
    np.testing.assert_allclose(outputs["paddle"], outputs["torch"], rtol=1e-5, atol=1e-5)


def _set(name, conv, weight, bias):
    if name == "paddle":
        conv.weight.set_value(weight)
        conv.bias.set_value(bias)
    else:
        import torch

        with torch.no_grad():
            conv.weight.copy_(torch.from_numpy(weight))
            conv.bias.copy_(torch.from_numpy(bias))


def _linear_steps(name, make_optimizer, steps=3):
    """A Linear(3, 2) from fixed weights after ``steps`` optimizer steps on growing inputs."""
    ops = ops_of_backend(name)
    layer = ops.nn.Linear(3, 2)
    weight = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)  # paddle's [in, out]
    _set_linear(name, layer, weight, np.zeros(2, np.float32))
    optimizer = make_optimizer(ops, layer.parameters())
    for step in range(steps):
        x = ops.to_tensor(np.full((4, 3), 10.0 * (step + 1), np.float32) * [1, -2, 3])
        ops.step(optimizer, ops.sum(layer(x) ** 2))
    weight = _numpy(layer.weight)
    return weight if name == "paddle" else weight.T


def _set_linear(name, layer, weight, bias):
    if name == "paddle":
        layer.weight.set_value(weight)
        layer.bias.set_value(bias)
    else:
        import torch

        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(weight.T.copy()))
            layer.bias.copy_(torch.from_numpy(bias))


def test_adam_clipping_each_clips_every_gradient_alike():
    clipped = {
        name: _linear_steps(name, lambda ops, p: ops.adam_clipping_each(p, 0.1, 0.5))
        for name in BOTH
    }
    np.testing.assert_allclose(clipped["paddle"], clipped["torch"], rtol=1e-5, atol=1e-6)
    plain = _linear_steps("torch", lambda ops, p: ops.adam(p, 0.1))
    assert not np.allclose(plain, clipped["torch"], atol=1e-4), "the clipping changed nothing"


def test_rmsprop_is_paddles_on_both_with_and_without_clipping():
    moved = {}
    for clip in (None, 0.5):
        for name in BOTH:
            moved[name, clip] = _linear_steps(
                name, lambda ops, p, c=clip: ops.rmsprop(p, 0.01, 0.99, 1e-5, c)
            )
        np.testing.assert_allclose(
            moved["paddle", clip], moved["torch", clip], rtol=1e-5, atol=1e-6
        )
    assert not np.allclose(moved["torch", None], moved["torch", 0.5]), (
        "the clipping changed nothing"
    )


def test_cumsum_gru_cell_step_and_layer_list():
    rng = np.random.default_rng(2)
    x, h = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(4, 5)).astype(np.float32)
    weights = {
        "weight_ih": rng.normal(size=(15, 3)).astype(np.float32),
        "weight_hh": rng.normal(size=(15, 5)).astype(np.float32),
        "bias_ih": rng.normal(size=15).astype(np.float32),
        "bias_hh": rng.normal(size=15).astype(np.float32),
    }
    results = {}
    for name in BOTH:
        ops = ops_of_backend(name)
        cell = ops.nn.GRUCell(3, 5)
        for key, value in weights.items():
            _copy(name, getattr(cell, key), value)
        hidden = ops.gru_cell_step(cell, ops.to_tensor(x), ops.to_tensor(h))
        layers = ops.layer_list([ops.nn.Linear(2, 2), ops.nn.Linear(2, 1)])
        assert len(layers) == 2 and sorted(layers.state_dict())[0] == "0.bias"
        results[name] = (_numpy(hidden), _numpy(ops.cumsum(ops.to_tensor(x), axis=0)))
    for first, second in zip(results["paddle"], results["torch"], strict=True):
        np.testing.assert_allclose(first, second, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results["torch"][1], np.cumsum(x, axis=0), rtol=1e-6)


def _copy(name, parameter, value):
    if name == "paddle":
        parameter.set_value(value)
    else:
        import torch

        with torch.no_grad():
            parameter.copy_(torch.from_numpy(value))


def test_rng_state_round_trip_and_seed():
    for name in BOTH:
        ops = ops_of_backend(name)
        like = ops.to_tensor(np.zeros(5, np.float32))
        ops.seed_rng(3)
        state = ops.get_rng_state()
        first = _numpy(ops.randn_like(like))
        assert not np.array_equal(first, _numpy(ops.randn_like(like))), "the stream did not move"
        ops.set_rng_state(state)
        np.testing.assert_array_equal(_numpy(ops.randn_like(like)), first)
        ops.seed_rng(3)
        np.testing.assert_array_equal(_numpy(ops.randn_like(like)), first)
