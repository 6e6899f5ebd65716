"""A ``parl.Model``'s trainable parameters as one flat float32 vector, and back."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from parl.core.ops import ops_for, ops_of_backend

import numpy as np

__all__ = ["FlatParameters"]


class FlatParameters:
    """Reads and writes every trainable parameter of ``model`` as one float32 vector.

    Evolution strategies search over that vector; the order is the model's
    ``named_parameters()`` order, each parameter raveled in C order in PARL's portable layout
    (a ``Linear`` weight as ``[in, out]``, which torch stores transposed), so a vector means
    the same network on paddle and on torch. Buffers (batch-norm statistics) and frozen
    parameters are not part of it.

    Args:
        model: the policy network.

    Examples:
        >>> from parl.testing import LinearModel
        >>> flat = FlatParameters(LinearModel(3, 2))
        >>> flat.size, flat.layout()
        (8, [('fc.weight', (3, 2)), ('fc.bias', (2,))])
    """

    def __init__(self, model: Any) -> None:
        try:
            ops = ops_for(model)
        except TypeError as exc:
            raise TypeError(f"FlatParameters needs a parl.Model: {exc}") from exc
        self.backend = ops.BACKEND.name
        self.model = model
        self.parameters = ops.trainable_parameters(model)
        if not self.parameters:
            raise ValueError(f"{type(model).__name__} has no trainable parameters to search over")
        transposed = ops.transposed_weights(model)
        self.transposed = [name in transposed for name, _ in self.parameters]
        self.shapes = [
            tuple(int(d) for d in (p.shape[::-1] if flip else p.shape))
            for (_, p), flip in zip(self.parameters, self.transposed, strict=True)
        ]
        self.sizes = [int(np.prod(shape)) for shape in self.shapes]
        self.size = sum(self.sizes)

    @property
    def ops(self) -> ModuleType:
        """The ops of the model's framework."""
        return ops_of_backend(self.backend)

    def layout(self) -> list[tuple[str, tuple[int, ...]]]:
        """``(name, shape)`` of every parameter in the vector, in order."""
        return [
            (name, shape) for (name, _), shape in zip(self.parameters, self.shapes, strict=True)
        ]

    def get(self) -> np.ndarray:
        """The current parameters as a new ``[size]`` float32 vector."""
        arrays = (self.ops.to_numpy(p) for _, p in self.parameters)
        return np.concatenate(
            [
                (array.T if flip else array).astype(np.float32).ravel()
                for array, flip in zip(arrays, self.transposed, strict=True)
            ]
        )

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
        for (_, param), flip, shape, start, end in zip(
            self.parameters, self.transposed, self.shapes, offsets[:-1], offsets[1:], strict=True
        ):
            value = values[start:end].reshape(shape)
            value = np.ascontiguousarray(value.T) if flip else value
            self.ops.assign(param, value.astype(self.ops.BACKEND.numpy_dtype(param)))
