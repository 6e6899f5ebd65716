"""Capturing a torch algorithm's whole update with ``torch.compile`` (``compile=True``).

``learn`` is compiled as one function: the forward passes, the backward passes, the optimizer
steps and the soft target updates inside it. On a GPU the mode is ``"reduce-overhead"``, which
replays the compiled graphs as CUDA graphs (one launch per graph instead of one per kernel); on
the CPU it is the default mode (inductor's fused C++ kernels). torch splits the update at
``backward()`` and at each optimizer step into a few graphs; each is captured.

A captured update is made for one call signature: the shapes, dtypes and devices of the tensors
given to ``learn`` and the values of its other arguments, taken from the first call. A call with
another signature (a last, smaller batch; a new learning rate passed to ``learn``) runs the
eager update instead, and the first such call logs one warning that says why, so that torch
never recompiles in the middle of training.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Hashable
from typing import Any

import torch
from torch.utils._pytree import tree_map

__all__ = ["CapturedLearn", "capture_learn"]

_logger = logging.getLogger("parl")


def _signature(value: Any) -> Hashable:
    """What a captured update is specialised on: tensor layouts and the other values, through
    tuples, lists, dicts and dataclasses (a :class:`~parl.core.transitions.Transitions`)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype, value.device, value.requires_grad)
    if isinstance(value, (tuple, list)):
        return (type(value), *(_signature(item) for item in value))
    if isinstance(value, dict):
        return (dict, *((key, _signature(item)) for key, item in value.items()))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value),
            *(_signature(getattr(value, f.name)) for f in dataclasses.fields(value)),
        )
    if isinstance(value, Hashable) and not hasattr(value, "shape"):
        return (type(value), value)
    # numpy arrays and the like: their layout, as a tensor's
    return (type(value), getattr(value, "shape", None), str(getattr(value, "dtype", "")))


def _describe(signature: Hashable) -> str:
    return str(signature)


class CapturedLearn:
    """``learn`` of one algorithm, compiled for the signature of its first call.

    Args:
        algorithm: the algorithm; its device at the first call picks the mode (CUDA gets CUDA
            graphs, ``"reduce-overhead"``).
        learn: its eager ``learn`` (or update step), bound.

    A copy or a pickle of the algorithm holds a fresh one, compiled again at its first call.
    """

    def __init__(self, algorithm: Any, learn: Callable[..., Any]) -> None:
        self.algorithm = algorithm
        self.name = learn.__name__
        self.owner = f"{type(algorithm).__name__}.{self.name}"
        self.compiled: Callable[..., Any] | None = None
        self.cuda_graphs = False
        self.signature: Hashable | None = None
        self.warned = False

    @property
    def eager(self) -> Callable[..., Any]:
        """The class's method bound to the algorithm (the instance attribute is this object)."""
        method: Callable[..., Any] = getattr(type(self.algorithm), self.name).__get__(
            self.algorithm
        )
        return method

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "compiled": None, "signature": None, "warned": False}

    def _compile(self) -> Callable[..., Any]:
        self.cuda_graphs = torch.device(self.algorithm.device).type == "cuda"
        mode = "reduce-overhead" if self.cuda_graphs else "default"
        return torch.compile(self.eager, mode=mode, dynamic=False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        signature = _signature((args, kwargs))
        if self.compiled is None:
            self.signature, self.compiled = signature, self._compile()
        if signature != self.signature:
            self._warn_eager(signature)
            return self.eager(*args, **kwargs)
        if not self.cuda_graphs:
            return self.compiled(*args, **kwargs)
        torch.compiler.cudagraph_mark_step_begin()
        # A CUDA graph writes its outputs into the same memory at every replay: the caller
        # gets copies, which outlive the next update.
        return tree_map(
            lambda x: x.clone() if isinstance(x, torch.Tensor) else x,
            self.compiled(*args, **kwargs),
        )

    def _warn_eager(self, signature: Hashable) -> None:
        if self.warned:
            return
        self.warned = True
        assert self.signature is not None
        _logger.warning(
            "%s with compile=True: this call's inputs differ from those the update was "
            "captured for (captured: %s; now: %s), so it runs eagerly, as will every call "
            "that differs; keep the batch size and the other arguments of learn() fixed (a "
            "learning rate changes through the optimizer, not learn's argument) to stay "
            "captured. This is logged once.",
            self.owner,
            _describe(self.signature),
            _describe(signature),
        )


def capture_learn(algorithm: Any, learn: Callable[..., Any]) -> Callable[..., Any]:
    """``learn`` (the algorithm's eager update, bound) captured as :class:`CapturedLearn`;
    compiled at its first call."""
    return CapturedLearn(algorithm, learn)
