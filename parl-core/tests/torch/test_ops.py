"""The ops interface: paddle's and torch's modules have the same names and give the same numbers."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

paddle = pytest.importorskip("paddle")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parl.core.ops import ops_for, ops_of_backend, ops_of_tensor  # noqa: E402

PADDLE, TORCH = ops_of_backend("paddle"), ops_of_backend("torch")
RNG = np.random.default_rng(0)
X = RNG.normal(size=(5, 4)).astype(np.float32)
Y = RNG.normal(size=(5, 4)).astype(np.float32)
INDEX = RNG.integers(0, 4, 5)


def _both(fn):
    """``fn(ops, to)`` on each framework, as numpy (``to`` makes a tensor of that framework)."""
    results = []
    for ops in (PADDLE, TORCH):
        out = fn(ops, lambda a, dtype="float32", ops=ops: ops.to_tensor(a, dtype))
        results.append(ops.to_numpy(out) if not isinstance(out, np.ndarray) else out)
    return results


def test_both_modules_have_the_same_names_and_signatures() -> None:
    assert sorted(PADDLE.__all__) == sorted(TORCH.__all__)
    for name in PADDLE.__all__:
        ours, theirs = getattr(PADDLE, name), getattr(TORCH, name)
        assert hasattr(PADDLE, name) and hasattr(TORCH, name), name
        if inspect.isfunction(ours) and inspect.isfunction(theirs):
            assert list(inspect.signature(ours).parameters) == list(
                inspect.signature(theirs).parameters
            ), name


@pytest.mark.parametrize(
    "op",
    [
        lambda ops, to: ops.mean(to(X), axis=1),
        lambda ops, to: ops.mean(to(X)),
        lambda ops, to: ops.sum(to(X), axis=0, keepdim=True),
        lambda ops, to: ops.max(to(X), axis=1),
        lambda ops, to: ops.min(to(X), axis=0),
        lambda ops, to: ops.argmax(to(X), axis=1),
        lambda ops, to: ops.take_along(to(X), to(INDEX, "int64")),
        lambda ops, to: ops.minimum(to(X), to(Y)),
        lambda ops, to: ops.maximum(to(X), to(Y)),
        lambda ops, to: ops.clip(to(X), -0.5, 0.5),
        lambda ops, to: ops.clip(to(X), low=0.0),
        lambda ops, to: ops.concat([to(X), to(Y)], axis=1),
        lambda ops, to: ops.stack([to(X), to(Y)], axis=0),
        lambda ops, to: ops.where(to(X) > 0, to(X), to(Y)),
        lambda ops, to: ops.zeros([2, 3], "int64"),
        lambda ops, to: ops.softmax(to(X), axis=-1),
        lambda ops, to: ops.log_softmax(to(X), axis=-1),
        lambda ops, to: ops.softplus(to(X)),
        lambda ops, to: ops.one_hot(to(INDEX, "int64"), 4),
        lambda ops, to: ops.broadcast_to(to(X[:1]), [5, 4]),
        lambda ops, to: ops.mse_loss(to(X), to(Y)),
        lambda ops, to: ops.huber_loss(to(X), to(Y), 0.3),
    ],
)
def test_ops_give_the_same_numbers(op) -> None:
    first, second = _both(op)
    np.testing.assert_allclose(first, second, rtol=1e-6, atol=1e-6)


def test_a_gradient_step_is_the_same() -> None:
    """adam + step with clipping: the same parameters after the step on both frameworks."""
    kernel = RNG.normal(size=(4, 3)).astype(np.float32)  # paddle's layout; torch's is .T
    after = []
    for ops, layout in ((PADDLE, kernel), (TORCH, kernel.T)):
        layer = ops.nn.Linear(4, 3)
        ops.assign(layer.weight, np.ascontiguousarray(layout))
        ops.assign(layer.bias, np.zeros(3, np.float32))
        parameters = [layer.weight, layer.bias]
        optimizer = ops.adam(parameters, lr=0.1)
        loss = ops.mse_loss(layer(ops.to_tensor(X)), ops.to_tensor(Y[:, :3]))
        ops.step(optimizer, loss, parameters, max_grad_norm=0.5)
        after.append(ops.to_numpy(layer.weight))
    np.testing.assert_allclose(after[0], after[1].T, rtol=1e-5, atol=1e-6)


def test_ops_are_found_from_models_and_tensors() -> None:
    assert ops_of_tensor(paddle.zeros([1])) is PADDLE
    assert ops_of_tensor(torch.nn.Parameter(torch.zeros(1))) is TORCH
    assert ops_for(TORCH.Model()) is TORCH
    with pytest.raises(TypeError, match="paddle or a torch tensor"):
        ops_of_tensor(np.zeros(1))
    with pytest.raises(TypeError, match="parl.Model"):
        ops_for(torch.nn.Linear(1, 1))


def test_paddle_refuses_a_device_it_cannot_take() -> None:
    assert PADDLE.resolve_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="paddle.set_device"):
        PADDLE.resolve_device("cuda")


def test_a_torch_agent_exports_forward_to_torchscript(tmp_path) -> None:
    """save_inference_model on torch: a TorchScript file that computes forward without PARL."""
    from parl.core.neutral import Agent, Algorithm
    from parl.testing import LinearModel

    agent = Agent(Algorithm(LinearModel(4, 2, backend="torch")))
    agent.save_inference_model(tmp_path / "policy", [[None, 4]], ["float32"])
    program = torch.jit.load(str(tmp_path / "policy.pt"))
    obs = torch.as_tensor(X)
    np.testing.assert_allclose(
        program(obs).detach().numpy(), agent.alg.model(obs).detach().numpy(), rtol=1e-6
    )
    with pytest.raises(ValueError, match="one shape and one dtype per forward input"):
        agent.save_inference_model(tmp_path / "bad", [[None, 4]], ["float32", "int64"])
