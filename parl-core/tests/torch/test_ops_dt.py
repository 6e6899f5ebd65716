"""The ops the decision transformer added: paddle's and torch's transformer layers, causal mask
and AdamW give the same numbers once the weights are carried across."""

from __future__ import annotations

from parl.core.ops import ops_of_backend

import numpy as np
import pytest

paddle = pytest.importorskip("paddle")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parl.core.torch.interop import from_paddle_weights, to_paddle_weights  # noqa: E402

PADDLE, TORCH = ops_of_backend("paddle"), ops_of_backend("torch")
RNG = np.random.default_rng(0)


def _twin_layers(d_model: int = 8, nhead: int = 2) -> tuple[object, object]:
    """A paddle layer with random weights and a torch layer given the same ones."""
    first = PADDLE.transformer_encoder_layer(d_model, nhead, 4 * d_model, 0.0)
    weights = {
        name: RNG.normal(size=tuple(p.shape)).astype(np.float32) * 0.3
        for name, p in first.state_dict().items()
    }
    first.set_state_dict({name: paddle.to_tensor(value) for name, value in weights.items()})
    second = TORCH.transformer_encoder_layer(d_model, nhead, 4 * d_model, 0.0)
    loaded = from_paddle_weights(second, weights)
    second.load_state_dict({name: torch.as_tensor(value) for name, value in loaded.items()})
    return first, second


def _run(ops, layer, x: np.ndarray) -> np.ndarray:
    tensor = ops.to_tensor(x)
    return ops.to_numpy(layer(tensor, ops.causal_mask(x.shape[1], tensor)).detach())


@pytest.mark.parametrize("train", [True, False])
def test_the_layers_give_the_same_outputs_with_a_causal_mask(train: bool) -> None:
    first, second = _twin_layers()
    first.train() if train else first.eval()
    second.train() if train else second.eval()
    x = RNG.normal(size=(3, 5, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(PADDLE, first, x), _run(TORCH, second, x), atol=2e-5)


def test_the_mask_keeps_later_positions_out_of_earlier_outputs() -> None:
    for ops, layer in zip((PADDLE, TORCH), _twin_layers(), strict=True):
        layer.eval()
        x = RNG.normal(size=(2, 6, 8)).astype(np.float32)
        changed = x.copy()
        changed[:, 4:] += 5.0
        before, after = _run(ops, layer, x), _run(ops, layer, changed)
        np.testing.assert_allclose(before[:, :4], after[:, :4], atol=1e-5)
        assert np.abs(before[:, 4:] - after[:, 4:]).max() > 0.1
        mask = ops.to_numpy(ops.causal_mask(3, ops.to_tensor(x)))
        assert (mask[np.tril_indices(3)] == 0).all()
        assert np.isneginf(mask[np.triu_indices(3, 1)]).all()


def test_attention_weights_round_trip_between_the_layouts() -> None:
    first, second = _twin_layers()
    paddle_weights = {name: p.numpy() for name, p in first.state_dict().items()}
    back = to_paddle_weights(second)
    assert sorted(back) == sorted(paddle_weights)
    for name, value in paddle_weights.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)
    assert "self_attn.in_proj_weight" in second.state_dict()  # torch's own packed layer


def test_adamw_steps_alike_and_decays_the_weights() -> None:
    start = RNG.normal(size=(4, 3)).astype(np.float32)
    after = []
    for ops in (PADDLE, TORCH):
        weight = ops.full_parameter([4, 3], 0.0)
        ops.assign(weight, start)
        optimizer = ops.adamw([weight], lr=0.1, weight_decay=0.5)
        for _ in range(3):
            ops.step(optimizer, ops.sum(weight.square()) * 0.0 + ops.sum(weight[0]))
        after.append(ops.to_numpy(weight.detach()))
    np.testing.assert_allclose(after[0], after[1], rtol=1e-5, atol=1e-6)
    # Rows without gradient only decay: three steps of w·(1 - lr·weight_decay).
    np.testing.assert_allclose(after[1][1:], start[1:] * 0.95**3, rtol=1e-5)
    assert np.all(after[1][0] < start[0] * 0.95**3)
