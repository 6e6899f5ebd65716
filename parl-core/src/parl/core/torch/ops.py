"""The ops interface (:mod:`parl.core.ops`) on torch: what framework-free update rules call.

Every function here has a namesake of the same meaning in :mod:`parl.core.paddle.ops`; the
interface is described in :mod:`parl.core.ops`. Tensors made here go to the device asked for;
nothing here reads a value back to the host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from parl.core.replicas import Replicas
from parl.core.torch.backend import BACKEND
from parl.core.torch.batch import (
    as_batch_actions,
    as_batch_continuous_actions,
    as_batch_obs,
    as_batch_vector,
    check_action_range,
)
from parl.core.torch.compile import capture_learn
from parl.core.torch.interop import linear_weight_names
from parl.core.torch.model import Model
from parl.core.torch.optim import clip_grad_norm_
from parl.core.torch.target import make_target, update_target
from parl.core.torch.tensors import assign, resolve_device, to_numpy

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

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

no_grad = torch.no_grad
minimum = torch.minimum
maximum = torch.maximum
where = torch.where


def to_tensor(value: Any, dtype: str = "float32", device: Any = None) -> torch.Tensor:
    """``value`` (numpy, a list or a tensor) as a tensor of ``dtype`` on ``device``.

    A numpy array on the CPU is shared, not copied; ``device=None`` keeps a tensor where it is
    and puts new ones on the CPU.
    """
    target = getattr(torch, dtype)
    if isinstance(value, torch.Tensor):
        return value.to(device=device, dtype=target)
    return torch.as_tensor(np.asarray(value, dtype=dtype), device=device)


def zeros(shape: Sequence[int], dtype: str = "float32", device: Any = None) -> torch.Tensor:
    """A tensor of zeros made on ``device`` (no host data copied there)."""
    return torch.zeros(list(shape), dtype=getattr(torch, dtype), device=device)


def move(tensor: torch.Tensor, device: Any) -> torch.Tensor:
    """``tensor`` on ``device`` (a host-to-device copy that does not wait)."""
    return tensor.to(device, non_blocking=True)


# -- math ------------------------------------------------------------------------------------


def mean(x: torch.Tensor, axis: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """The mean over ``axis`` (all entries when None)."""
    return x.mean() if axis is None else x.mean(dim=axis, keepdim=keepdim)


def sum(x: torch.Tensor, axis: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """The sum over ``axis`` (all entries when None)."""
    return x.sum() if axis is None else x.sum(dim=axis, keepdim=keepdim)


def max(x: torch.Tensor, axis: int, keepdim: bool = False) -> torch.Tensor:
    """The largest entry along ``axis`` (values only)."""
    return x.amax(dim=axis, keepdim=keepdim)


def min(x: torch.Tensor, axis: int, keepdim: bool = False) -> torch.Tensor:
    """The smallest entry along ``axis`` (values only)."""
    return x.amin(dim=axis, keepdim=keepdim)


def argmax(x: torch.Tensor, axis: int, keepdim: bool = False) -> torch.Tensor:
    """The int64 index of the largest entry along ``axis``."""
    return x.argmax(dim=axis, keepdim=keepdim)


def take_along(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values[..., index[...]]``: one entry of the last axis of values ``[*B, N]`` per int64
    index ``[*B]``; shape ``[*B]``."""
    return values.gather(-1, index.unsqueeze(-1)).squeeze(-1)


def softmax(x: torch.Tensor, axis: int = -1) -> torch.Tensor:
    """The softmax over ``axis``."""
    return F.softmax(x, dim=axis)


def log_softmax(x: torch.Tensor, axis: int = -1) -> torch.Tensor:
    """The log of the softmax over ``axis``, computed stably."""
    return F.log_softmax(x, dim=axis)


def softplus(x: torch.Tensor) -> torch.Tensor:
    """``log(1 + exp(x))``, computed stably."""
    return F.softplus(x)


def one_hot(index: torch.Tensor, n: int) -> torch.Tensor:
    """float32 one-hot rows ``[*B, n]`` of int64 indices ``[*B]`` in ``[0, n)``.

    A comparison with ``arange(n)``, not ``F.one_hot``: that one reads the indices' range back
    to the host, which waits for the device on every call.
    """
    return (index.unsqueeze(-1) == torch.arange(n, device=index.device)).to(torch.float32)


def broadcast_to(x: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """``x`` broadcast to ``shape`` (a view)."""
    return x.expand(list(shape))


# -- random draws (torch's generator of the tensor's device, which parl.set_seed seeds) -------


def randn_like(x: torch.Tensor) -> torch.Tensor:
    """Standard normal draws shaped, typed and placed as ``x``."""
    return torch.randn_like(x)


def uniform_like(x: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """Uniform draws in ``[low, high)`` shaped, typed and placed as ``x``."""
    return torch.empty_like(x).uniform_(low, high)


def multinomial(probs: torch.Tensor) -> torch.Tensor:
    """One int64 category per row of probabilities ``[N, K]``: shape ``[N]``."""
    return torch.multinomial(probs, num_samples=1).squeeze(-1)


def clip(x: torch.Tensor, low: float | None = None, high: float | None = None) -> torch.Tensor:
    """``x`` limited to ``[low, high]`` (either bound may be None)."""
    return x.clamp(min=low, max=high)


def concat(tensors: Sequence[torch.Tensor], axis: int = 0) -> torch.Tensor:
    """The tensors joined along an existing ``axis``."""
    return torch.cat(list(tensors), dim=axis)


def stack(tensors: Sequence[torch.Tensor], axis: int = 0) -> torch.Tensor:
    """The tensors joined along a new ``axis``."""
    return torch.stack(list(tensors), dim=axis)


# -- losses ----------------------------------------------------------------------------------


def mse_loss(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The mean squared error, a scalar."""
    return F.mse_loss(prediction, target)


def huber_loss(prediction: torch.Tensor, target: torch.Tensor, delta: float) -> torch.Tensor:
    """The mean Huber (smooth L1) loss, quadratic within ``delta`` and linear outside.

    paddle's ``smooth_l1_loss(delta)`` is torch's ``huber_loss(delta)`` (not torch's
    ``smooth_l1_loss(beta)``, which divides by ``beta``).
    """
    return F.huber_loss(prediction, target, delta=delta)


# -- optimizer and gradients -----------------------------------------------------------------


def adam(parameters: Iterable[torch.Tensor], lr: float) -> torch.optim.Adam:
    """An Adam optimizer over ``parameters``."""
    return torch.optim.Adam(list(parameters), lr=lr)


def step(
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    parameters: Sequence[torch.Tensor] = (),
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
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if replicas is not None:
        replicas.reduce_gradients(optimizer)
    if max_grad_norm is not None:
        clip_grad_norm_(parameters, max_grad_norm)
    optimizer.step()


# -- layers and parameters ---------------------------------------------------------------------


def layer_list(layers: Iterable[torch.nn.Module]) -> torch.nn.ModuleList:
    """The layers as a list whose parameters the parent model owns (``torch.nn.ModuleList``)."""
    return nn.ModuleList(list(layers))


def trainable_parameters(model: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """``(name, parameter)`` of every parameter of ``model`` that takes gradients, in order."""
    return [(name, p) for name, p in model.named_parameters() if p.requires_grad]


def transposed_weights(model: torch.nn.Module) -> frozenset[str]:
    """Names of the weights stored transposed from PARL's portable layout (paddle's
    ``Linear`` layout, ``[in, out]``): every ``torch.nn.Linear`` weight (``[out, in]``)."""
    return linear_weight_names(model)


# -- inference export --------------------------------------------------------------------------


def save_inference_model(
    model: torch.nn.Module,
    path: str,
    shapes: Sequence[Sequence[int | None]],
    dtypes: Sequence[str],
) -> None:
    """``model.forward`` traced to TorchScript (``<path>.pt``, loaded by ``torch.jit.load``),
    from zero inputs of the given shapes on the model's device (``None`` traced as 1: the
    traced program keeps a free batch axis for ops that broadcast over it)."""
    device = device_of(model)
    inputs = tuple(
        torch.zeros(
            [1 if size is None else size for size in shape], dtype=getattr(torch, dtype)
        ).to(device)
        for shape, dtype in zip(shapes, dtypes, strict=True)
    )
    with torch.no_grad():
        traced = torch.jit.trace(model, inputs)
    traced.save(f"{path}.pt")


# -- devices ---------------------------------------------------------------------------------


def device_of(model: torch.nn.Module) -> torch.device:
    """Where ``model``'s first parameter lives (the CPU for a model without parameters)."""
    first = next(model.parameters(), None)
    return first.device if first is not None else torch.device("cpu")


def move_algorithm(algorithm: Any, device: Any) -> torch.device:
    """Move every model, optimizer slot and tensor of ``checkpoint_state`` to ``device``.

    In place, so optimizers built before keep working. Returns the device, checked.

    Raises:
        ValueError: ``device`` is not usable here; nothing is moved then.
    """
    target = resolve_device(device)
    with torch.no_grad():
        for _, model in algorithm.named_models():
            model.to(target)
        for attr in type(algorithm).checkpoint_state:
            value = getattr(algorithm, attr, None)
            if isinstance(value, torch.Tensor):
                value.data = value.data.to(target)
        for _, optimizer in algorithm.named_optimizers():
            for slots in optimizer.state.values():
                for key, slot in slots.items():
                    # Adam's step counter stays on the CPU unless the optimizer is fused.
                    if isinstance(slot, torch.Tensor) and not (key == "step" and slot.ndim == 0):
                        slots[key] = slot.to(target)
    return target


# -- ops added for the impala-marl family ----------------------------------------------------


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Set the learning rate of ``optimizer`` for its next steps."""
    for group in optimizer.param_groups:
        group["lr"] = float(lr)


def get_lr(optimizer: torch.optim.Optimizer) -> float:
    """The learning rate ``optimizer`` steps with now."""
    return float(optimizer.param_groups[0]["lr"])


def conv2d_layer(
    in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0
) -> nn.Conv2d:
    """A 2-D convolution layer over NCHW inputs (weight ``[out, in, k, k]`` on both frameworks)."""
    return nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)


def max_pool2d_layer(kernel_size: int) -> nn.MaxPool2d:
    """A 2-D max-pooling layer over NCHW inputs, its stride the kernel size."""
    return nn.MaxPool2d(kernel_size)


def adam_clipping_each(
    parameters: Iterable[torch.Tensor], lr: float, max_norm: float
) -> torch.optim.Adam:
    """An Adam optimizer that, before each step, scales every parameter's gradient down to
    L2 norm ``max_norm`` when it is longer (each tensor by its own norm, not the global one)."""
    optimizer = torch.optim.Adam(list(parameters), lr=lr)

    def clip_each(optimizer: torch.optim.Optimizer, *_: Any) -> None:
        with torch.no_grad():
            for group in optimizer.param_groups:
                for parameter in group["params"]:
                    if parameter.grad is not None:
                        norm = torch.linalg.vector_norm(parameter.grad)
                        parameter.grad.mul_(max_norm / norm.clamp(min=max_norm))

    optimizer.register_step_pre_hook(clip_each)
    return optimizer


class _PaddleRMSProp(torch.optim.Optimizer):
    """paddle's RMSProp (no momentum, not centred): epsilon inside the square root."""

    def __init__(self, parameters: list[torch.Tensor], lr: float, rho: float, epsilon: float):
        super().__init__(parameters, {"lr": lr, "rho": rho, "epsilon": epsilon})

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for parameter in group["params"]:
                if parameter.grad is None:
                    continue
                state = self.state[parameter]
                if "mean_square" not in state:
                    state["mean_square"] = torch.zeros_like(parameter)
                mean_square = state["mean_square"]
                grad, rho = parameter.grad, group["rho"]
                mean_square.mul_(rho).addcmul_(grad, grad, value=1.0 - rho)
                parameter.addcdiv_(
                    grad, (mean_square + group["epsilon"]).sqrt(), value=-group["lr"]
                )


def rmsprop(
    parameters: Iterable[torch.Tensor],
    lr: float,
    rho: float,
    epsilon: float,
    max_grad_norm: float | None = None,
) -> torch.optim.Optimizer:
    """RMSProp as paddle defines it: ``r = rho·r + (1 - rho)·g²``, ``w -= lr·g / sqrt(r + epsilon)``
    (epsilon inside the root), the gradients first scaled to global L2 norm ``max_grad_norm``
    when longer (None: not clipped)."""
    optimizer = _PaddleRMSProp(list(parameters), lr, rho, epsilon)
    if max_grad_norm:

        def clip_global(optimizer: torch.optim.Optimizer, *_: Any) -> None:
            grads = [
                p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None
            ]
            norm = torch.linalg.vector_norm(
                torch.stack([torch.linalg.vector_norm(g) for g in grads])
            )
            scale = max_grad_norm / norm.clamp(min=max_grad_norm)
            for grad in grads:
                grad.mul_(scale)

        optimizer.register_step_pre_hook(clip_global)
    return optimizer


def cumsum(x: torch.Tensor, axis: int) -> torch.Tensor:
    """The running sum along ``axis``."""
    return torch.cumsum(x, dim=axis)


def get_rng_state() -> Any:
    """The state of the framework's default (CPU) generator, which ``randn_like`` and the
    other draws use on the CPU; :func:`set_rng_state` puts it back."""
    return torch.get_rng_state()


def set_rng_state(state: Any) -> None:
    """Put the framework's default (CPU) generator at ``state`` (from :func:`get_rng_state`)."""
    torch.set_rng_state(state)


def seed_rng(seed: int) -> None:
    """Seed the framework's default generator with ``seed``."""
    torch.manual_seed(seed)


def gru_cell_step(cell: nn.GRUCell, x: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """The next hidden state ``[N, hidden]`` of the framework's ``GRUCell`` (``nn.GRUCell``,
    the same gates and weight layout on both) from inputs ``[N, in]`` and states ``[N, hidden]``."""
    return cell(x, hidden)


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


def take_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """The rows of ``x`` at int64 ``index [K]``: shape ``[K, *x.shape[1:]]`` (a copy)."""
    return x.index_select(0, index)


def adam_with_eps(parameters: Iterable[torch.Tensor], lr: float, eps: float) -> torch.optim.Adam:
    """An Adam optimizer over ``parameters`` whose denominator adds ``eps``."""
    return torch.optim.Adam(list(parameters), lr=lr, eps=eps)


def orthogonal_linear(in_dim: int, out_dim: int, gain: float) -> nn.Linear:
    """A ``Linear`` layer with an orthogonal weight scaled by ``gain`` and a zero bias."""
    layer = nn.Linear(in_dim, out_dim)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def full_parameter(shape: Sequence[int], value: float) -> nn.Parameter:
    """A trainable float32 parameter of ``shape`` filled with ``value`` (set it on a Model)."""
    return nn.Parameter(torch.full(tuple(shape), float(value)))


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
    layer = nn.Linear(fan_in, fan_out)
    with torch.no_grad():
        if weight_bound is None:
            nn.init.xavier_uniform_(layer.weight)
        else:
            layer.weight.uniform_(-weight_bound, weight_bound)
        if bias_bound is None:
            layer.bias.zero_()
        else:
            layer.bias.uniform_(-bias_bound, bias_bound)
    return layer


def uniform_parameter(shape: Sequence[int], bound: float) -> nn.Parameter:
    """A trainable float32 parameter of ``shape`` drawn from ``U(±bound)``."""
    return nn.Parameter(torch.empty(list(shape)).uniform_(-bound, bound))


def scalar_parameter(value: float, device: Any = None, trainable: bool = True) -> torch.Tensor:
    """A 0-d float32 parameter holding ``value`` on ``device`` (a learnable scalar such as
    ``log_alpha``)."""
    return torch.tensor(float(value), device=resolve_device(device), requires_grad=trainable)


def batched_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``x @ weight + bias`` for stacked layers: x ``[B, in]`` or ``[K, B, in]``, weight
    ``[K, in, out]``, bias ``[K, 1, out]``; shape ``[K, B, out]``."""
    return torch.baddbmm(bias, x.expand(weight.shape[0], *x.shape[-2:]), weight)


def logsumexp(x: torch.Tensor, axis: int) -> torch.Tensor:
    """``log(sum(exp(x)))`` over ``axis``, computed stably."""
    return torch.logsumexp(x, dim=axis)


@contextlib.contextmanager
def no_grad_of(parameters: Sequence[torch.Tensor]) -> Iterator[None]:
    """Inside the block, no gradient of ``parameters`` is computed (gradients still flow through
    them to other inputs); their flags are restored on exit."""
    flags = [param.requires_grad for param in parameters]
    for param in parameters:
        param.requires_grad_(False)
    try:
        yield
    finally:
        for param, flag in zip(parameters, flags, strict=True):
            param.requires_grad_(flag)


def grad_leaf(x: torch.Tensor) -> torch.Tensor:
    """A copy of ``x`` cut from its graph that records gradients (for :func:`grad`)."""
    return x.detach().requires_grad_(True)


def grad(output: torch.Tensor, wrt: torch.Tensor) -> torch.Tensor:
    """The gradient of the scalar ``output`` with respect to ``wrt``."""
    (gradient,) = torch.autograd.grad(output, wrt)
    return gradient


# -- ops added for data on the device (replay memory) -----------------------------------------

__all__ += ["generator", "randint"]


def generator(seed: int | None, device: Any = None) -> torch.Generator:
    """A random generator of its own on ``device``, seeded with ``seed`` (None: from the OS),
    for :func:`randint`; the framework's default generator is left alone."""
    made = torch.Generator(device=torch.device("cpu" if device is None else device))
    if seed is None:
        made.seed()
    else:
        made.manual_seed(seed)
    return made


def randint(high: int, size: int, generator: torch.Generator) -> torch.Tensor:
    """int64 ``[size]`` drawn uniformly from ``[0, high)`` with ``generator`` (from
    :func:`generator`), on its device: no value goes through the host."""
    return torch.randint(high, (size,), generator=generator, device=generator.device)


# -- ops added for the decision transformer (ac family) ---------------------------------------

__all__ += ["adamw", "causal_mask", "transformer_encoder_layer"]


def transformer_encoder_layer(
    d_model: int, nhead: int, dim_feedforward: int, dropout: float
) -> nn.TransformerEncoderLayer:
    """torch's ``TransformerEncoderLayer`` as GPT-2 arranges it: inputs ``[B, L, d_model]``
    (batch first), layer norm before attention and before the ReLU feed-forward block.
    Call it as ``layer(x, mask)`` with a mask from :func:`causal_mask`."""
    return nn.TransformerEncoderLayer(
        d_model,
        nhead,
        dim_feedforward,
        dropout,
        activation="relu",
        batch_first=True,
        norm_first=True,
    )


def causal_mask(length: int, like: torch.Tensor) -> torch.Tensor:
    """The additive attention mask ``[length, length]`` that lets position ``i`` attend to
    positions ``<= i`` only: 0 on and below the diagonal, -inf above; on ``like``'s device."""
    full = torch.full((length, length), float("-inf"), device=like.device)
    return torch.triu(full, diagonal=1)


def adamw(parameters: Iterable[torch.Tensor], lr: float, weight_decay: float) -> torch.optim.AdamW:
    """An AdamW optimizer over ``parameters``: Adam with decoupled weight decay,
    ``w -= lr·weight_decay·w`` each step besides Adam's update."""
    return torch.optim.AdamW(list(parameters), lr=lr, weight_decay=weight_decay)
