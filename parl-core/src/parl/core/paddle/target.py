"""Target networks: a frozen copy of a model, and hard or soft (Polyak) updates of it.

Value-based and actor-critic algorithms regress on targets computed by a lagging copy of their
networks. :func:`make_target` creates that copy, :func:`update_target` moves it towards the
online network. Both work on the whole state dict, parameters *and* persistent buffers, so
statistics such as BatchNorm's running mean and variance reach the target too.

Examples:
    >>> import paddle
    >>> online = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.BatchNorm1D(8))
    >>> target = make_target(online)
    >>> update_target(online, target, decay=0.995)  # soft: target = 0.995·target + 0.005·online
    >>> update_target(online, target)  # hard copy
"""

from __future__ import annotations

import copy
from typing import TypeVar

from parl.core.weights import check_decay, state_pairs

import paddle

__all__ = ["make_target", "update_target"]

LayerT = TypeVar("LayerT", bound=paddle.nn.Layer)
_FLOAT_DTYPES = frozenset({paddle.float16, paddle.bfloat16, paddle.float32, paddle.float64})


def make_target(model: LayerT) -> LayerT:
    """Return an independent deep copy of ``model`` whose parameters take no gradients.

    The copy starts with the model's weights; an optimizer built on ``model.parameters()``
    never touches it, and a loss that reaches it by mistake does not build gradients for it.
    """
    target = copy.deepcopy(model)
    for parameter in target.parameters():
        parameter.stop_gradient = True
    return target


def update_target(source: paddle.nn.Layer, target: paddle.nn.Layer, decay: float = 0.0) -> None:
    """Move ``target`` towards ``source``: ``target = decay·target + (1 − decay)·source``.

    Applied, without gradients and in place, to every floating-point entry of the state dict
    (parameters and persistent buffers); integer and boolean entries (counters) are copied.
    ``decay=0`` is a hard copy, ``decay = 1 − tau`` a Polyak update with rate ``tau``.

    Args:
        source: the online network.
        target: a network of the same architecture (same state-dict names and shapes).
        decay: the weight kept by the target's current values, in ``[0, 1]``.

    Raises:
        ValueError: ``decay`` is outside ``[0, 1]`` or ``target`` is ``source``.
        WeightsMismatchError: the two networks' state dicts differ in names or shapes.
    """
    if target is source:
        raise ValueError("update_target needs a separate target network, got the source itself")
    decay = check_decay(decay)
    pairs = state_pairs(
        source.state_dict(), target.state_dict(), type(source).__name__, type(target).__name__
    )
    if decay == 1.0:
        return
    # In-place ops: one kernel per entry for a copy, two for a blend (the fastest of assign,
    # lerp_ and scale_+add_ on paddle 3.3, see benchmarks/core).
    with paddle.no_grad():
        for src, dst in pairs:
            # A dtype lookup: Tensor.is_floating_point() costs ~9 µs a call on paddle 3.3.
            if decay == 0.0 or dst.dtype not in _FLOAT_DTYPES:
                # paddle's stub omits copy_'s source argument, which it takes at runtime.
                dst.copy_(src)  # type: ignore[call-arg]
            else:
                dst.scale_(decay).add_(src * (1.0 - decay))
