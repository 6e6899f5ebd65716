"""parl.Model: weight exchange, target sync, deep copies."""

from __future__ import annotations

import copy

import parl
from parl.core.errors import WeightsMismatchError

import numpy as np
import paddle
import pytest


def test_get_set_weights_round_trip(tiny_model_cls: type) -> None:
    source, target = tiny_model_cls(), tiny_model_cls()
    target.set_weights(source.get_weights())
    obs = paddle.rand([5, 3])
    np.testing.assert_array_equal(source(obs).numpy(), target(obs).numpy())
    assert all(isinstance(v, np.ndarray) for v in source.get_weights().values())


def test_set_weights_with_missing_key_names_it_and_changes_nothing(tiny_model_cls: type) -> None:
    model = tiny_model_cls()
    before = model.get_weights()
    weights = dict(before)
    del weights["fc2.bias"]
    with pytest.raises(WeightsMismatchError, match="missing \\['fc2.bias'\\]"):
        model.set_weights({k: v + 1 for k, v in weights.items()})
    for name, value in model.get_weights().items():
        np.testing.assert_array_equal(value, before[name])


def test_set_weights_with_wrong_shape_names_parameter_and_both_shapes(
    tiny_model_cls: type,
) -> None:
    model = tiny_model_cls()
    weights = model.get_weights()
    weights["fc1.weight"] = np.zeros((4, 8), dtype=np.float32)
    with pytest.raises(WeightsMismatchError, match=r"'fc1.weight'.*\(4, 8\).*\(3, 8\)"):
        model.set_weights(weights)


@pytest.mark.parametrize("decay", [0.0, 0.25, 0.995, 1.0])
def test_sync_weights_to_blends_parameters(tiny_model_cls: type, decay: float) -> None:
    source, target = tiny_model_cls(), tiny_model_cls()
    s, t = source.get_weights(), target.get_weights()
    source.sync_weights_to(target, decay=decay)
    for name, value in target.get_weights().items():
        np.testing.assert_allclose(value, decay * t[name] + (1 - decay) * s[name], rtol=1e-6)
    for name, value in source.get_weights().items():
        np.testing.assert_array_equal(value, s[name])


def test_sync_weights_to_does_not_track_gradients(tiny_model_cls: type) -> None:
    source, target = tiny_model_cls(), tiny_model_cls()
    source.sync_weights_to(target, decay=0.5)
    loss = target(paddle.rand([2, 3])).sum()
    loss.backward()
    assert all(p.grad is None for p in source.parameters())


def test_sync_weights_to_rejects_bad_targets(tiny_model_cls: type) -> None:
    model = tiny_model_cls()
    with pytest.raises(ValueError, match="itself"):
        model.sync_weights_to(model)
    with pytest.raises(TypeError, match="parl.Model"):
        model.sync_weights_to(paddle.nn.Linear(3, 8))
    with pytest.raises(ValueError, match=r"decay must be in \[0, 1\], got 1.5"):
        model.sync_weights_to(tiny_model_cls(), decay=1.5)
    with pytest.raises(WeightsMismatchError, match="fc1.weight"):
        model.sync_weights_to(tiny_model_cls(obs_dim=5))


def test_deepcopy_is_independent(tiny_model_cls: type) -> None:
    model = tiny_model_cls()
    clone = copy.deepcopy(model)
    assert isinstance(clone, parl.Model)
    clone.set_weights({k: np.zeros_like(v) for k, v in clone.get_weights().items()})
    assert np.abs(model.get_weights()["fc1.weight"]).sum() > 0
