"""Target networks: hard and Polyak updates of parameters and buffers, frozen copies."""

from __future__ import annotations

import parl
from parl.core.errors import WeightsMismatchError
from parl.core.paddle.target import make_target, update_target

import numpy as np
import paddle
import pytest


class NormalisedQ(parl.Model):
    """A model with every kind of state: parameters, BatchNorm statistics, a float and an int
    buffer (an observation normaliser's running mean and its count)."""

    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(3, width)
        self.bn = paddle.nn.BatchNorm1D(width)
        self.register_buffer("obs_mean", paddle.zeros([3]))
        self.register_buffer("obs_count", paddle.zeros([1], dtype="int64"))

    def forward(self, obs):
        return self.bn(self.fc(obs - self.obs_mean))


def _trained() -> NormalisedQ:
    model = NormalisedQ()
    model.train()
    model(paddle.randn([16, 3]) * 3 + 1)  # moves the BatchNorm running statistics
    model.obs_mean.set_value(np.array([1.0, 2.0, 3.0], np.float32))
    model.obs_count.set_value(np.array([7], np.int64))
    return model


@pytest.mark.parametrize("decay", [0.0, 0.25, 0.995, 1.0])
def test_update_blends_parameters_and_float_buffers_and_copies_counters(decay: float) -> None:
    source, target = _trained(), NormalisedQ()
    s, t = source.get_weights(), target.get_weights()
    assert {"bn._mean", "bn._variance", "obs_mean", "obs_count"} <= set(s)
    update_target(source, target, decay)
    for name, value in target.get_weights().items():
        if name == "obs_count":
            expected = t[name] if decay == 1.0 else s[name]
            np.testing.assert_array_equal(value, expected)
        else:
            np.testing.assert_allclose(value, decay * t[name] + (1 - decay) * s[name], rtol=1e-6)
    for name, value in source.get_weights().items():
        np.testing.assert_array_equal(value, s[name])


def test_sync_weights_to_keeps_parls_signature_and_now_moves_buffers() -> None:
    source, target = _trained(), NormalisedQ()
    source.sync_weights_to(target, decay=0.0)
    for name, value in target.get_weights().items():
        np.testing.assert_array_equal(value, source.get_weights()[name])
    with pytest.raises(TypeError, match="parl.Model"):
        source.sync_weights_to(paddle.nn.Linear(3, 4))


def test_make_target_is_an_independent_frozen_copy() -> None:
    model = _trained()
    target = make_target(model)
    assert all(p.stop_gradient for p in target.parameters())
    assert not all(p.stop_gradient for p in model.parameters())
    model(paddle.randn([4, 3])).sum().backward()
    target(paddle.randn([4, 3])).sum()
    assert all(p.grad is None for p in target.parameters())
    target.fc.weight.set_value(np.zeros([3, 4], np.float32))
    assert np.abs(model.fc.weight.numpy()).sum() > 0


def test_update_does_not_track_gradients() -> None:
    source, target = NormalisedQ(), NormalisedQ()
    update_target(source, target, decay=0.5)
    target(paddle.randn([2, 3])).sum().backward()
    assert all(p.grad is None for p in source.parameters())


def test_bad_targets_are_refused() -> None:
    model = NormalisedQ()
    with pytest.raises(ValueError, match="separate target"):
        update_target(model, model)
    with pytest.raises(ValueError, match=r"decay must be in \[0, 1\], got 1.5"):
        update_target(model, NormalisedQ(), decay=1.5)
    with pytest.raises(WeightsMismatchError, match=r"'fc.weight' has shape \[3, 5\]"):
        update_target(model, NormalisedQ(width=5))
    without_buffers = paddle.nn.Layer()
    without_buffers.fc, without_buffers.bn = paddle.nn.Linear(3, 4), paddle.nn.BatchNorm1D(4)
    with pytest.raises(WeightsMismatchError, match=r"missing \['obs_count', 'obs_mean'\]"):
        update_target(model, without_buffers)
