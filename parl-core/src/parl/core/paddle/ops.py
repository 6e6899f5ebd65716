"""The ops interface (:mod:`parl.core.ops`) on paddle: what framework-free update rules call.

Every function here has a namesake of the same meaning in :mod:`parl.core.torch.ops`; the
interface is described in :mod:`parl.core.ops`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from parl.core.paddle import nn
from parl.core.paddle.backend import BACKEND
from parl.core.paddle.batch import (
    as_batch_actions,
    as_batch_continuous_actions,
    as_batch_obs,
    as_batch_vector,
    check_action_range,
)
from parl.core.paddle.batch import to_tensor as batch_to_tensor
from parl.core.paddle.model import Model
from parl.core.paddle.optim import clip_grad_norm_
from parl.core.paddle.target import make_target, update_target
from parl.core.paddle.tensors import assign, to_numpy
from parl.core.replicas import Replicas

import paddle
import paddle.nn.functional as F

__all__ = [
    "BACKEND",
    "Model",
    "adam",
    "argmax",
    "as_batch_actions",
    "as_batch_continuous_actions",
    "as_batch_obs",
    "as_batch_vector",
    "assign",
    "broadcast_to",
    "capture_learn",
    "check_action_range",
    "clip",
    "concat",
    "device_of",
    "huber_loss",
    "layer_list",
    "log_softmax",
    "make_target",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "move",
    "move_algorithm",
    "mse_loss",
    "multinomial",
    "nn",
    "no_grad",
    "one_hot",
    "randn_like",
    "resolve_device",
    "save_inference_model",
    "softmax",
    "softplus",
    "stack",
    "step",
    "sum",
    "take_along",
    "to_numpy",
    "to_tensor",
    "trainable_parameters",
    "transposed_weights",
    "uniform_like",
    "update_target",
    "where",
    "zeros",
]

no_grad = paddle.no_grad
minimum = paddle.minimum
maximum = paddle.maximum
where = paddle.where


def to_tensor(value: Any, dtype: str = "float32", device: Any = None) -> paddle.Tensor:
    """``value`` (numpy, a list or a tensor) as a tensor of ``dtype`` (paddle's current place)."""
    return batch_to_tensor(value, dtype)


def zeros(shape: Sequence[int], dtype: str = "float32", device: Any = None) -> paddle.Tensor:
    """A tensor of zeros made on paddle's current place (no host data copied there)."""
    return paddle.zeros(list(shape), dtype=getattr(paddle, dtype))


def capture_learn(algorithm: Any, learn: Callable[..., Any]) -> Callable[..., Any]:
    """``learn`` unchanged: ``compile=True`` captures torch updates only (paddle has no
    ``torch.compile``; its ``paddle.jit.to_static`` is not wired in). Logs that once."""
    logging.getLogger("parl").warning(
        "%s with compile=True: paddle has no torch.compile, so learn() runs eagerly (build the "
        "model with backend='torch' to capture the update)",
        type(algorithm).__name__,
    )
    return learn


def move(tensor: paddle.Tensor, device: Any) -> paddle.Tensor:
    """``tensor`` on ``device``; paddle computes where its tensors were made, so it is kept."""
    return tensor


# -- math ------------------------------------------------------------------------------------


def mean(x: paddle.Tensor, axis: int | None = None, keepdim: bool = False) -> paddle.Tensor:
    """The mean over ``axis`` (all entries when None)."""
    return x.mean(axis=axis, keepdim=keepdim)


def sum(x: paddle.Tensor, axis: int | None = None, keepdim: bool = False) -> paddle.Tensor:
    """The sum over ``axis`` (all entries when None)."""
    return x.sum(axis=axis, keepdim=keepdim)


def max(x: paddle.Tensor, axis: int, keepdim: bool = False) -> paddle.Tensor:
    """The largest entry along ``axis`` (values only)."""
    return x.max(axis=axis, keepdim=keepdim)


def min(x: paddle.Tensor, axis: int, keepdim: bool = False) -> paddle.Tensor:
    """The smallest entry along ``axis`` (values only)."""
    return x.min(axis=axis, keepdim=keepdim)


def argmax(x: paddle.Tensor, axis: int, keepdim: bool = False) -> paddle.Tensor:
    """The int64 index of the largest entry along ``axis``."""
    return x.argmax(axis=axis, keepdim=keepdim)


def take_along(values: paddle.Tensor, index: paddle.Tensor) -> paddle.Tensor:
    """``values[..., index[...]]``: one entry of the last axis of values ``[*B, N]`` per int64
    index ``[*B]``; shape ``[*B]``."""
    return paddle.take_along_axis(values, index.unsqueeze(-1), axis=-1).squeeze(-1)


def softmax(x: paddle.Tensor, axis: int = -1) -> paddle.Tensor:
    """The softmax over ``axis``."""
    return F.softmax(x, axis=axis)


def log_softmax(x: paddle.Tensor, axis: int = -1) -> paddle.Tensor:
    """The log of the softmax over ``axis``, computed stably."""
    return F.log_softmax(x, axis=axis)


def softplus(x: paddle.Tensor) -> paddle.Tensor:
    """``log(1 + exp(x))``, computed stably."""
    return F.softplus(x)


def one_hot(index: paddle.Tensor, n: int) -> paddle.Tensor:
    """float32 one-hot rows ``[*B, n]`` of int64 indices ``[*B]``."""
    return F.one_hot(index, n).astype("float32")


def broadcast_to(x: paddle.Tensor, shape: Sequence[int]) -> paddle.Tensor:
    """``x`` broadcast to ``shape``."""
    return paddle.broadcast_to(x, list(shape))


# -- random draws (paddle's generator, which parl.set_seed seeds) ------------------------------


def randn_like(x: paddle.Tensor) -> paddle.Tensor:
    """Standard normal draws shaped and typed as ``x``."""
    return paddle.randn(x.shape, dtype=x.dtype)


def uniform_like(x: paddle.Tensor, low: float, high: float) -> paddle.Tensor:
    """Uniform draws in ``[low, high)`` shaped and typed as ``x``."""
    return paddle.uniform(x.shape, x.dtype, min=low, max=high)


def multinomial(probs: paddle.Tensor) -> paddle.Tensor:
    """One int64 category per row of probabilities ``[N, K]``: shape ``[N]``."""
    return paddle.multinomial(probs, num_samples=1).squeeze(-1)


def clip(x: paddle.Tensor, low: float | None = None, high: float | None = None) -> paddle.Tensor:
    """``x`` limited to ``[low, high]`` (either bound may be None)."""
    return paddle.clip(x, min=low, max=high)


def concat(tensors: Sequence[paddle.Tensor], axis: int = 0) -> paddle.Tensor:
    """The tensors joined along an existing ``axis``."""
    return paddle.concat(list(tensors), axis=axis)


def stack(tensors: Sequence[paddle.Tensor], axis: int = 0) -> paddle.Tensor:
    """The tensors joined along a new ``axis``."""
    return paddle.stack(list(tensors), axis=axis)


# -- losses ----------------------------------------------------------------------------------


def mse_loss(prediction: paddle.Tensor, target: paddle.Tensor) -> paddle.Tensor:
    """The mean squared error, a scalar."""
    return F.mse_loss(prediction, target)


def huber_loss(prediction: paddle.Tensor, target: paddle.Tensor, delta: float) -> paddle.Tensor:
    """The mean Huber (smooth L1) loss, quadratic within ``delta`` and linear outside."""
    return F.smooth_l1_loss(prediction, target, delta=delta)


# -- optimizer and gradients -----------------------------------------------------------------


def adam(parameters: Iterable[paddle.Tensor], lr: float) -> paddle.optimizer.Adam:
    """An Adam optimizer over ``parameters`` (one fused update: fewer dispatches on small nets)."""
    return paddle.optimizer.Adam(
        learning_rate=lr, parameters=list(parameters), use_multi_tensor=True
    )


def step(
    optimizer: paddle.optimizer.Optimizer,
    loss: paddle.Tensor,
    parameters: Sequence[paddle.Tensor] = (),
    max_grad_norm: float | None = None,
    replicas: Replicas | None = None,
) -> None:
    """One gradient step: clear the gradients, backpropagate ``loss``, clip, update.

    Args:
        parameters: the parameters whose gradient norm ``max_grad_norm`` bounds.
        max_grad_norm: clip the global gradient norm to this value; None does not clip.
        replicas: the data-parallel group whose gradients are combined with this process's
            after backpropagation, before clipping (an algorithm's ``replicas``); None: this
            process alone.
    """
    optimizer.clear_grad()
    loss.backward()
    if replicas is not None:
        replicas.reduce_gradients(optimizer)
    if max_grad_norm is not None:
        clip_grad_norm_(parameters, max_grad_norm)
    optimizer.step()


# -- layers and parameters ---------------------------------------------------------------------


def layer_list(layers: Iterable[paddle.nn.Layer]) -> paddle.nn.LayerList:
    """The layers as a list whose parameters the parent model owns (``paddle.nn.LayerList``)."""
    return nn.LayerList(list(layers))


def trainable_parameters(model: paddle.nn.Layer) -> list[tuple[str, paddle.Tensor]]:
    """``(name, parameter)`` of every parameter of ``model`` that takes gradients, in order."""
    return [(name, p) for name, p in model.named_parameters() if not p.stop_gradient]


def transposed_weights(model: paddle.nn.Layer) -> frozenset[str]:
    """Names of the weights stored transposed from PARL's portable layout (paddle's own
    ``Linear`` layout, ``[in, out]``): none on paddle."""
    return frozenset()


# -- inference export --------------------------------------------------------------------------


def save_inference_model(
    model: paddle.nn.Layer,
    path: str,
    shapes: Sequence[Sequence[int | None]],
    dtypes: Sequence[str],
) -> None:
    """``model.forward`` as a static program (``paddle.jit.save``): ``<path>.pdmodel`` and
    ``<path>.pdiparams``, loaded by ``paddle.jit.load``; ``None`` is a free dimension."""
    specs = [
        # paddle's stubs list dtype names as a Literal; paddle refuses unknown ones itself.
        paddle.static.InputSpec(shape=list(shape), dtype=dtype)  # type: ignore[arg-type]
        for shape, dtype in zip(shapes, dtypes, strict=True)
    ]
    paddle.jit.save(model, path, input_spec=specs)


# -- devices ---------------------------------------------------------------------------------


def resolve_device(device: Any) -> str:
    """``device`` checked: paddle runs where ``paddle.set_device`` put it, so only ``"cpu"``.

    Raises:
        ValueError: any other device; the message says how paddle is put on a GPU.
    """
    if device is None or str(device) == "cpu":
        return "cpu"
    raise ValueError(
        f"device={device!r}: PARL's paddle backend takes no device argument; paddle computes on "
        "the place set by paddle.set_device('gpu') before the model is built, or pass "
        "device='cpu'"
    )


def device_of(model: paddle.nn.Layer) -> str:
    """Where paddle computes (its current place, ``"cpu"`` on a CPU build)."""
    return str(paddle.get_device())


def move_algorithm(algorithm: Any, device: Any) -> str:
    """Check ``device`` for ``algorithm`` (paddle moves nothing) and return its name."""
    return resolve_device(device)


# -- ops added for the impala-marl family ----------------------------------------------------


def set_lr(optimizer: paddle.optimizer.Optimizer, lr: float) -> None:
    """Set the learning rate of ``optimizer`` for its next steps."""
    optimizer.set_lr(float(lr))


def get_lr(optimizer: paddle.optimizer.Optimizer) -> float:
    """The learning rate ``optimizer`` steps with now."""
    return float(optimizer.get_lr())


def conv2d_layer(
    in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0
) -> nn.Conv2D:
    """A 2-D convolution layer over NCHW inputs (weight ``[out, in, k, k]`` on both frameworks)."""
    return nn.Conv2D(in_channels, out_channels, kernel_size, stride=stride, padding=padding)


def max_pool2d_layer(kernel_size: int) -> nn.MaxPool2D:
    """A 2-D max-pooling layer over NCHW inputs, its stride the kernel size."""
    return nn.MaxPool2D(kernel_size)


def adam_clipping_each(
    parameters: Iterable[paddle.Tensor], lr: float, max_norm: float
) -> paddle.optimizer.Adam:
    """An Adam optimizer that, before each step, scales every parameter's gradient down to
    L2 norm ``max_norm`` when it is longer (each tensor by its own norm, not the global one)."""
    return paddle.optimizer.Adam(
        learning_rate=lr, parameters=list(parameters), grad_clip=nn.ClipGradByNorm(max_norm)
    )


def rmsprop(
    parameters: Iterable[paddle.Tensor],
    lr: float,
    rho: float,
    epsilon: float,
    max_grad_norm: float | None = None,
) -> paddle.optimizer.RMSProp:
    """RMSProp as paddle defines it: ``r = rho·r + (1 - rho)·g²``, ``w -= lr·g / sqrt(r + epsilon)``
    (epsilon inside the root), the gradients first scaled to global L2 norm ``max_grad_norm``
    when longer (None: not clipped)."""
    return paddle.optimizer.RMSProp(
        learning_rate=lr,
        rho=rho,
        epsilon=epsilon,
        parameters=list(parameters),
        grad_clip=nn.ClipGradByGlobalNorm(max_grad_norm) if max_grad_norm else None,
    )


def cumsum(x: paddle.Tensor, axis: int) -> paddle.Tensor:
    """The running sum along ``axis``."""
    return paddle.cumsum(x, axis=axis)


def get_rng_state() -> Any:
    """The state of the framework's default (CPU) generator, which ``randn_like`` and the
    other draws use on the CPU; :func:`set_rng_state` puts it back."""
    return paddle.get_rng_state()


def set_rng_state(state: Any) -> None:
    """Put the framework's default (CPU) generator at ``state`` (from :func:`get_rng_state`)."""
    paddle.set_rng_state(state)


def seed_rng(seed: int) -> None:
    """Seed the framework's default generator with ``seed``."""
    paddle.seed(seed)


def gru_cell_step(cell: nn.GRUCell, x: paddle.Tensor, hidden: paddle.Tensor) -> paddle.Tensor:
    """The next hidden state ``[N, hidden]`` of the framework's ``GRUCell`` (``nn.GRUCell``,
    the same gates and weight layout on both) from inputs ``[N, in]`` and states ``[N, hidden]``."""
    return cell(x, hidden)[0]


__all__ += [
    "adam_clipping_each",
    "conv2d_layer",
    "cumsum",
    "get_lr",
    "get_rng_state",
    "gru_cell_step",
    "max_pool2d_layer",
    "rmsprop",
    "seed_rng",
    "set_lr",
    "set_rng_state",
]


# -- ops added for the pg family ---------------------------------------------------------------

__all__ += ["adam_with_eps", "full_parameter", "orthogonal_linear", "take_rows"]


def take_rows(x: paddle.Tensor, index: paddle.Tensor) -> paddle.Tensor:
    """The rows of ``x`` at int64 ``index [K]``: shape ``[K, *x.shape[1:]]`` (a copy)."""
    return paddle.gather(x, index)


def adam_with_eps(
    parameters: Iterable[paddle.Tensor], lr: float, eps: float
) -> paddle.optimizer.Adam:
    """An Adam optimizer over ``parameters`` whose denominator adds ``eps`` (one fused update)."""
    return paddle.optimizer.Adam(
        learning_rate=lr, epsilon=eps, parameters=list(parameters), use_multi_tensor=True
    )


def orthogonal_linear(in_dim: int, out_dim: int, gain: float) -> nn.Linear:
    """A ``Linear`` layer with an orthogonal weight scaled by ``gain`` and a zero bias."""
    return nn.Linear(
        in_dim,
        out_dim,
        weight_attr=paddle.ParamAttr(initializer=nn.initializer.Orthogonal(gain)),
        bias_attr=paddle.ParamAttr(initializer=nn.initializer.Constant(0.0)),
    )


def full_parameter(shape: Sequence[int], value: float) -> paddle.Tensor:
    """A trainable float32 parameter of ``shape`` filled with ``value`` (set it on a Model)."""
    return paddle.create_parameter(
        list(shape), "float32", default_initializer=nn.initializer.Constant(value)
    )


# -- ops added for the ac family --------------------------------------------------------------

__all__ += [
    "batched_linear",
    "grad",
    "grad_leaf",
    "linear",
    "logsumexp",
    "no_grad_of",
    "scalar_parameter",
    "uniform_parameter",
]


def linear(
    fan_in: int, fan_out: int, weight_bound: float | None = None, bias_bound: float | None = None
) -> nn.Linear:
    """A ``Linear`` layer: weights ``U(±weight_bound)`` (Xavier-uniform when None), bias
    ``U(±bias_bound)`` (zero when None)."""

    def attr(bound: float | None) -> paddle.ParamAttr | None:
        if bound is None:
            return None
        return paddle.ParamAttr(initializer=nn.initializer.Uniform(-bound, bound))

    return nn.Linear(fan_in, fan_out, attr(weight_bound), attr(bias_bound))


def uniform_parameter(shape: Sequence[int], bound: float) -> paddle.Tensor:
    """A trainable float32 parameter of ``shape`` drawn from ``U(±bound)``."""
    attr = paddle.ParamAttr(initializer=nn.initializer.Uniform(-bound, bound))
    return paddle.create_parameter(list(shape), "float32", attr=attr)


def scalar_parameter(value: float, device: Any = None, trainable: bool = True) -> paddle.Tensor:
    """A 0-d float32 parameter holding ``value`` (a learnable scalar such as ``log_alpha``)."""
    resolve_device(device)
    parameter = paddle.create_parameter(
        [], "float32", default_initializer=nn.initializer.Constant(value)
    )
    parameter.stop_gradient = not trainable
    return parameter


def batched_linear(x: paddle.Tensor, weight: paddle.Tensor, bias: paddle.Tensor) -> paddle.Tensor:
    """``x @ weight + bias`` for stacked layers: x ``[B, in]`` or ``[K, B, in]``, weight
    ``[K, in, out]``, bias ``[K, 1, out]``; shape ``[K, B, out]``."""
    y = paddle.matmul(x, weight)
    # Expanded first: paddle's add broadcasting [K, 1, out] over the middle axis took as long
    # as the matmul itself (256 wide), forward and backward.
    return y + bias.expand(y.shape)


def logsumexp(x: paddle.Tensor, axis: int) -> paddle.Tensor:
    """``log(sum(exp(x)))`` over ``axis``, computed stably."""
    return paddle.logsumexp(x, axis=axis)


@contextlib.contextmanager
def no_grad_of(parameters: Sequence[paddle.Tensor]) -> Iterator[None]:
    """Inside the block, no gradient of ``parameters`` is computed (gradients still flow through
    them to other inputs); their flags are restored on exit."""
    flags = [param.stop_gradient for param in parameters]
    for param in parameters:
        param.stop_gradient = True
    try:
        yield
    finally:
        for param, flag in zip(parameters, flags, strict=True):
            param.stop_gradient = flag


def grad_leaf(x: paddle.Tensor) -> paddle.Tensor:
    """A copy of ``x`` cut from its graph that records gradients (for :func:`grad`)."""
    leaf = x.detach()
    leaf.stop_gradient = False
    return leaf


def grad(output: paddle.Tensor, wrt: paddle.Tensor) -> paddle.Tensor:
    """The gradient of the scalar ``output`` with respect to ``wrt``."""
    (gradient,) = paddle.grad(output, wrt)
    return gradient


# -- ops added for data on the device (replay memory) -----------------------------------------

__all__ += ["generator", "randint"]


class _Generator:
    """The state of a generator of its own: paddle draws only from its default generator, so
    :func:`randint` swaps this state in for a draw and the default one back after it."""

    def __init__(self, seed: int | None) -> None:
        default = paddle.get_rng_state()
        try:
            if seed is None:
                paddle.seed(int.from_bytes(os.urandom(4), "little"))
            else:
                paddle.seed(seed)
            self.state = paddle.get_rng_state()
        finally:
            paddle.set_rng_state(default)


def generator(seed: int | None, device: Any = None) -> _Generator:
    """A random generator of its own on paddle's current place, seeded with ``seed`` (None:
    from the OS), for :func:`randint`; the framework's default generator is left alone."""
    return _Generator(seed)


def randint(high: int, size: int, generator: _Generator) -> paddle.Tensor:
    """int64 ``[size]`` drawn uniformly from ``[0, high)`` with ``generator`` (from
    :func:`generator`), on paddle's current place: no value goes through the host."""
    default = paddle.get_rng_state()
    paddle.set_rng_state(generator.state)
    try:
        drawn = paddle.randint(0, high, [size], dtype="int64")
        generator.state = paddle.get_rng_state()
    finally:
        paddle.set_rng_state(default)
    return drawn


# -- ops added for the decision transformer (ac family) ---------------------------------------

__all__ += ["adamw", "causal_mask", "transformer_encoder_layer"]


def transformer_encoder_layer(
    d_model: int, nhead: int, dim_feedforward: int, dropout: float
) -> nn.TransformerEncoderLayer:
    """paddle's ``TransformerEncoderLayer`` as GPT-2 arranges it: inputs ``[B, L, d_model]``,
    layer norm before attention and before the ReLU feed-forward block. Call it as
    ``layer(x, mask)`` with a mask from :func:`causal_mask`."""
    return nn.TransformerEncoderLayer(
        d_model, nhead, dim_feedforward, dropout, activation="relu", normalize_before=True
    )


def causal_mask(length: int, like: paddle.Tensor) -> paddle.Tensor:
    """The additive attention mask ``[length, length]`` that lets position ``i`` attend to
    positions ``<= i`` only: 0 on and below the diagonal, -inf above; on ``like``'s device."""
    full = paddle.full([length, length], float("-inf"), dtype="float32").to(like.place)
    return paddle.triu(full, diagonal=1)


def adamw(
    parameters: Iterable[paddle.Tensor], lr: float, weight_decay: float
) -> paddle.optimizer.AdamW:
    """An AdamW optimizer over ``parameters``: Adam with decoupled weight decay,
    ``w -= lr·weight_decay·w`` each step besides Adam's update."""
    return paddle.optimizer.AdamW(
        learning_rate=lr, parameters=list(parameters), weight_decay=weight_decay
    )
