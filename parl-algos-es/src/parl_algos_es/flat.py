"""A ``parl.Model``'s trainable parameters as one flat float32 vector, and back."""

from __future__ import annotations

from typing import Any

from parl.core.model import numpy_dtype
from parl.core.paddle import Model

import numpy as np
import paddle

__all__ = ["FlatParameters"]


class FlatParameters:
    """Reads and writes every trainable parameter of ``model`` as one float32 vector.

    Evolution strategies search over that vector; the order is the model's
    ``named_parameters()`` order, each parameter raveled in C order. Buffers (batch-norm
    statistics) and frozen parameters (``stop_gradient=True``) are not part of it.

    Args:
        model: the policy network.

    Examples:
        >>> from parl.testing import LinearModel
        >>> flat = FlatParameters(LinearModel(3, 2))
        >>> flat.size, flat.layout()
        (8, [('fc.weight', (3, 2)), ('fc.bias', (2,))])
    """

    def __init__(self, model: Model) -> None:
        if not isinstance(model, Model):
            raise TypeError(f"FlatParameters needs a parl.Model, got {type(model).__name__}")
        self.model = model
        self.parameters = [(n, p) for n, p in model.named_parameters() if not p.stop_gradient]
        if not self.parameters:
            raise ValueError(f"{type(model).__name__} has no trainable parameters to search over")
        self.shapes = [tuple(int(d) for d in p.shape) for _, p in self.parameters]
        self.sizes = [int(np.prod(shape)) for shape in self.shapes]
        self.size = sum(self.sizes)

    def layout(self) -> list[tuple[str, tuple[int, ...]]]:
        """``(name, shape)`` of every parameter in the vector, in order."""
        return [
            (name, shape) for (name, _), shape in zip(self.parameters, self.shapes, strict=True)
        ]

    def get(self) -> np.ndarray:
        """The current parameters as a new ``[size]`` float32 vector."""
        return np.concatenate([p.numpy().astype(np.float32).ravel() for _, p in self.parameters])

    def check(self, vector: Any) -> np.ndarray:
        """Return ``vector`` as float32 after checking it fits: ``[size]``, finite numbers.

        Raises:
            ValueError: wrong length or shape, non-numbers, NaN or infinity.
        """
        array = np.asarray(vector)
        if array.dtype.kind not in "iuf":
            raise ValueError(f"a parameter vector must hold numbers, got {array.dtype}")
        if array.shape != (self.size,):
            raise ValueError(
                f"a parameter vector for {type(self.model).__name__} must have shape "
                f"({self.size},), got {array.shape}; it has {len(self.sizes)} parameters "
                f"{self.layout()}"
            )
        if not np.isfinite(array).all():
            raise ValueError("the parameter vector holds NaN or infinite values")
        return array.astype(np.float32)

    def set(self, vector: Any) -> None:
        """Write ``vector`` into the model's parameters (checked before anything is written)."""
        values = self.check(vector)
        offsets = np.cumsum([0, *self.sizes])
        with paddle.no_grad():
            for (_, param), shape, start, end in zip(
                self.parameters, self.shapes, offsets[:-1], offsets[1:], strict=True
            ):
                param.set_value(values[start:end].reshape(shape).astype(numpy_dtype(param)))
