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
