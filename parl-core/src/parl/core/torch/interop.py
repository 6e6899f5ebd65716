"""Weights between the paddle and the torch backend: the same network, two layouts.

Both frameworks name a model's weights by its attribute paths (``body.0.weight``), and a
network built the same way on both has the same names. They differ in one layout: a
``paddle.nn.Linear`` stores its weight ``[in, out]``, a ``torch.nn.Linear`` ``[out, in]``.
These functions transpose exactly the weights of the torch model's ``Linear`` layers, so a
square layer is converted as surely as any other (a shape check alone could not tell). An
attention layer differs in its names too: torch's ``MultiheadAttention`` packs the query, key
and value projections into ``in_proj_weight`` ``[3·d, d]`` and ``in_proj_bias``, paddle's
``MultiHeadAttention`` keeps three ``Linear`` layers, ``q_proj``, ``k_proj`` and ``v_proj``;
the functions split and join them.
"""

from __future__ import annotations

from collections.abc import Mapping

from parl.core.errors import WeightsMismatchError

import numpy as np
import torch

__all__ = ["from_paddle_weights", "linear_weight_names", "to_paddle_weights"]


def linear_weight_names(model: torch.nn.Module) -> frozenset[str]:
    """The state-dict names of the weights of ``model``'s ``torch.nn.Linear`` layers."""
    return frozenset(
        f"{name}.weight" if name else "weight"
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear)
    )


def from_paddle_weights(
    model: torch.nn.Module, weights: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Return paddle weights (``get_weights()`` of the paddle twin) laid out for ``model``.

    Raises:
        WeightsMismatchError: a weight of a ``Linear`` layer is not a matrix.
    """
    converted: dict[str, np.ndarray] = {}
    linear = linear_weight_names(model)
    weights = dict(weights)
    for prefix in _attention_prefixes(model):
        try:
            parts = [weights.pop(f"{prefix}{p}_proj.{kind}") for kind in _KINDS for p in _QKV]
        except KeyError as exc:
            raise WeightsMismatchError(
                f"{type(model).__name__} has an attention layer at {prefix or 'the top'}, but "
                f"the paddle weights lack {exc.args[0]}"
            ) from None
        matrices, biases = parts[:3], parts[3:]
        converted[f"{prefix}in_proj_weight"] = np.concatenate([np.asarray(m).T for m in matrices])
        converted[f"{prefix}in_proj_bias"] = np.concatenate([np.asarray(b) for b in biases])
    for name, value in weights.items():
        array = np.asarray(value)
        if name in linear:
            if array.ndim != 2:
                raise WeightsMismatchError(
                    f"{name} is a Linear layer's weight in {type(model).__name__}, but the "
                    f"paddle weights give it shape {array.shape}, not a matrix"
                )
            array = np.ascontiguousarray(array.T)
        converted[name] = array
    return converted


def to_paddle_weights(model: torch.nn.Module) -> dict[str, np.ndarray]:
    """Return ``model``'s weights laid out for its paddle twin's ``set_weights``."""
    linear = linear_weight_names(model)
    converted = {
        name: np.ascontiguousarray(value.T) if name in linear else value
        for name, value in (
            (name, tensor.detach().cpu().numpy()) for name, tensor in model.state_dict().items()
        )
    }
    for prefix in _attention_prefixes(model):
        matrices = np.split(converted.pop(f"{prefix}in_proj_weight"), 3)
        biases = np.split(converted.pop(f"{prefix}in_proj_bias"), 3)
        for p, matrix, bias in zip(_QKV, matrices, biases, strict=True):
            converted[f"{prefix}{p}_proj.weight"] = np.ascontiguousarray(matrix.T)
            converted[f"{prefix}{p}_proj.bias"] = bias
    return converted


_QKV, _KINDS = ("q", "k", "v"), ("weight", "bias")


def _attention_prefixes(model: torch.nn.Module) -> list[str]:
    """``"<path>."`` of every ``MultiheadAttention`` of ``model`` with packed projections."""
    return [
        f"{name}." if name else ""
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.MultiheadAttention) and module._qkv_same_embed_dim
    ]
