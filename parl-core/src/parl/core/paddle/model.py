"""``parl.Model``: a ``paddle.nn.Layer`` with weight exchange and target-network sync."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from parl.core.paddle.backend import BACKEND
from parl.core.paddle.mkl import slow_mkl_dispatch
from parl.core.paddle.target import update_target
from parl.core.paddle.tensors import numpy_dtype
from parl.core.weights import CHECKPOINT_HINT, check_weights, load_weights

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

    backend_name: ClassVar[str] = "paddle"

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
        load_weights(self.state_dict(), weights, type(self).__name__, BACKEND)

    def sync_weights_to(self, target_model: Model, decay: float = 0.0) -> None:
        """Move ``target_model``'s weights towards this model's (PARL's signature).

        Computes ``target = decay * target + (1 - decay) * self`` for every parameter and
        persistent buffer, under ``no_grad`` (see :func:`parl.core.paddle.target.update_target`):
        ``decay=0`` copies, ``decay=1 - tau`` is a Polyak (soft) update.

        Args:
            target_model: a model of the same architecture, not this model itself.
            decay: the weight of the target's current value, in ``[0, 1]``.
        """
        if not isinstance(target_model, Model):
            raise TypeError(f"target_model must be a parl.Model, got {type(target_model).__name__}")
        update_target(self, target_model, decay)
