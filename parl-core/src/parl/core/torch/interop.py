"""Weights between the paddle and the torch backend: the same network, two layouts.

Both frameworks name a model's weights by its attribute paths (``body.0.weight``), and a
network built the same way on both has the same names. They differ in one layout: a
``paddle.nn.Linear`` stores its weight ``[in, out]``, a ``torch.nn.Linear`` ``[out, in]``.
These functions transpose exactly the weights of the torch model's ``Linear`` layers, so a
square layer is converted as surely as any other (a shape check alone could not tell).
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
    converted = {}
    linear = linear_weight_names(model)
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
    return {
        name: np.ascontiguousarray(value.T) if name in linear else value
        for name, value in (
            (name, tensor.detach().cpu().numpy()) for name, tensor in model.state_dict().items()
        )
    }
