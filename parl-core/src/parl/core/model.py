"""``parl.Model``: a ``paddle.nn.Layer`` with weight exchange and target-network sync."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from parl.core import slow_mkl_dispatch
from parl.core.errors import WeightsMismatchError
from parl.core.target import update_target

import numpy as np
import paddle

__all__ = ["CHECKPOINT_HINT", "Model", "check_weights", "numpy_dtype"]

if slow_mkl_dispatch():
    logging.getLogger("parl").warning(
        "paddle computed on this AMD CPU before parl was imported, so its MKL runs slow generic "
        "kernels (Linear layers about 2.5x slower). Import parl before paddle's first "
        "computation, or start Python with MKL_DEBUG_CPU_TYPE=5 (MKL_DEBUG_CPU_TYPE=0 keeps "
        "MKL's own choice and silences this)."
    )

Shape = tuple[int, ...]
# Array kinds that can be weights: bool, signed and unsigned ints, floats.
_NUMBER_KINDS = "biuf"


def _as_array(value: Any) -> np.ndarray:
    return value.numpy() if isinstance(value, paddle.Tensor) else np.asarray(value)


_WEIGHTS_HINT = "pass the dict returned by get_weights() of the same architecture"
CHECKPOINT_HINT = "the file was written by an agent built differently"


def check_weights(
    expected: Mapping[str, tuple[Shape, np.dtype]],
    given: Mapping[str, Any],
    owner: str,
    hint: str = _WEIGHTS_HINT,
) -> dict[str, np.ndarray]:
    """Check ``given`` against ``expected`` and return its arrays cast to the expected dtypes.

    Everything is checked before anything is returned, so a caller that writes only after this
    returns never applies half of a bad dict.

    Args:
        expected: entry name to the shape and numpy dtype it must have.
        given: entry name to an array, a tensor or anything ``numpy.asarray`` takes.
        owner: what the weights are for, used in messages (e.g. ``"CartpoleModel"``).
        hint: how to fix a name mismatch, appended to its message.

    Raises:
        WeightsMismatchError: a name is missing or unexpected, a value is not numeric (a string
            or object array), or a shape differs.
    """
    missing = sorted(set(expected) - set(given))
    unexpected = sorted(set(given) - set(expected))
    if missing or unexpected:
        raise WeightsMismatchError(
            f"weights for {owner} do not match its parameters: missing {missing}, "
            f"unexpected {unexpected}; {hint}"
        )
    arrays = {}
    for name, (shape, dtype) in expected.items():
        array = _as_array(given[name])
        if array.dtype.kind not in _NUMBER_KINDS:
            raise WeightsMismatchError(
                f"weight {name!r} of {owner} holds {array.dtype} values; weights must be "
                "numbers (bool, int or float arrays)"
            )
        if tuple(array.shape) != tuple(shape):
            raise WeightsMismatchError(
                f"weight {name!r} of {owner} has shape {tuple(array.shape)}, expected "
                f"{tuple(shape)}"
            )
        arrays[name] = array.astype(dtype, copy=False)
    return arrays


def numpy_dtype(tensor: paddle.Tensor) -> np.dtype:
    """The numpy dtype of ``tensor``'s values, without copying them to the host."""
    try:
        return np.dtype(str(tensor.dtype).removeprefix("paddle."))
    except TypeError:  # bfloat16 and other types numpy lacks
        return tensor.numpy().dtype


class Model(paddle.nn.Layer):
    """Base class of the networks an :class:`~parl.Algorithm` trains.

    A ``Model`` is a normal ``paddle.nn.Layer`` (call ``super().__init__()`` and define
    ``forward``); it adds numpy weight exchange for distributed actors and a fast, gradient-free
    sync into a target network. ``copy.deepcopy(model)`` gives an independent copy.

    Examples:
        >>> import paddle, parl
        >>> class MLP(parl.Model):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = paddle.nn.Linear(4, 2)
        ...     def forward(self, obs):
        ...         return self.fc(obs)
        >>> sorted(MLP().get_weights())
        ['fc.bias', 'fc.weight']
    """

    def get_weights(self) -> dict[str, np.ndarray]:
        """Return every parameter and buffer as a numpy array, keyed by its structured name."""
        return {name: tensor.numpy() for name, tensor in self.state_dict().items()}

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        """Load weights from a dict of arrays such as :meth:`get_weights` returns.

        Names, shapes and value types are checked before anything is written, so a bad dict
        leaves the model unchanged. Values are cast to the parameters' dtypes.

        Raises:
            WeightsMismatchError: a name is missing or unexpected, a shape differs, or a value
                is not numeric.
        """
        state = self.state_dict()
        arrays = check_weights(
            {name: (tuple(t.shape), numpy_dtype(t)) for name, t in state.items()},
            weights,
            type(self).__name__,
        )
        with paddle.no_grad():
            for name, tensor in state.items():
                tensor.set_value(arrays[name])

    def sync_weights_to(self, target_model: Model, decay: float = 0.0) -> None:
        """Move ``target_model``'s weights towards this model's (PARL's signature).

        Computes ``target = decay * target + (1 - decay) * self`` for every parameter and
        persistent buffer, under ``no_grad`` (see :func:`parl.core.target.update_target`):
        ``decay=0`` copies, ``decay=1 - tau`` is a Polyak (soft) update.

        Args:
            target_model: a model of the same architecture, not this model itself.
            decay: the weight of the target's current value, in ``[0, 1]``.
        """
        if not isinstance(target_model, Model):
            raise TypeError(f"target_model must be a parl.Model, got {type(target_model).__name__}")
        update_target(self, target_model, decay)
