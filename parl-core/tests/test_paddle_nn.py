"""parl.core.paddle.nn: paddle.nn with a Linear that calls its kernel directly."""

from __future__ import annotations

from pathlib import Path

from parl.core.neutral import Model
from parl.core.paddle import nn

import numpy as np
import paddle
import pytest


def _pair(in_dim: int, out_dim: int, bias: bool = True) -> tuple[paddle.nn.Linear, nn.Linear]:
    """paddle's Linear and ours with the same parameters."""
    paddle.seed(0)
    theirs = paddle.nn.Linear(in_dim, out_dim, bias_attr=None if bias else False)
    ours = nn.Linear(in_dim, out_dim, bias_attr=None if bias else False)
    ours.set_state_dict(theirs.state_dict())
    return theirs, ours


@pytest.mark.parametrize("bias", [True, False])
def test_linear_gives_paddles_outputs_and_gradients(bias: bool) -> None:
    theirs, ours = _pair(5, 3, bias)
    x = paddle.to_tensor(np.random.default_rng(0).normal(size=(7, 5)).astype("float32"))
    out_theirs, out_ours = theirs(x), ours(x)
    np.testing.assert_array_equal(out_ours.numpy(), out_theirs.numpy())
    (out_theirs**2).sum().backward()
    (out_ours**2).sum().backward()
    for name, parameter in ours.named_parameters():
        np.testing.assert_allclose(
            parameter.grad.numpy(), dict(theirs.named_parameters())[name].grad.numpy(), rtol=1e-6
        )


def test_linear_takes_the_direct_kernel_on_a_cpu_build(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(paddle.nn.Linear, "forward", lambda self, x: calls.append("paddle"))
    _, ours = _pair(2, 2)
    ours(paddle.ones([1, 2]))
    assert calls == ([] if not paddle.is_compiled_with_cuda() else ["paddle"])


def test_linear_exports_through_paddle_jit(tmp_path: Path) -> None:
    """Under ``paddle.jit`` (not eager) the layer is paddle's own, so exported programs run."""
    _, ours = _pair(3, 2)
    spec = [paddle.static.InputSpec([None, 3], "float32")]
    paddle.jit.save(
        paddle.jit.to_static(ours, input_spec=spec, full_graph=True), str(tmp_path / "m")
    )
    loaded = paddle.jit.load(str(tmp_path / "m"))
    x = paddle.ones([4, 3])
    np.testing.assert_allclose(loaded(x).numpy(), ours(x).numpy(), rtol=1e-6)


def test_other_names_are_paddles() -> None:
    assert nn.Sequential is paddle.nn.Sequential and nn.ReLU is paddle.nn.ReLU
    assert issubclass(nn.Linear, paddle.nn.Linear)
    with pytest.raises(AttributeError):
        nn.NoSuchLayer  # noqa: B018


def test_networks_written_once_build_it_on_paddle() -> None:
    class Net(Model):
        def __init__(self, *, backend: str | None = None) -> None:
            super().__init__()
            self.fc = self.nn.Linear(3, 2)

        def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
            return self.fc(obs)

    net = Net(backend="paddle")
    assert type(net.fc) is nn.Linear
    assert sorted(net.state_dict()) == ["fc.bias", "fc.weight"]
