"""``parl.Model`` on torch: a ``torch.nn.Module`` with weight exchange and target-network sync."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from parl.core.torch.backend import BACKEND
from parl.core.torch.target import update_target
from parl.core.weights import load_weights

import numpy as np
import torch

__all__ = ["Model"]


class Model(torch.nn.Module):
    """Base class of the networks an algorithm trains, on torch (PARL 2.x's ``parl.Model``).

    A ``Model`` is a normal ``torch.nn.Module`` (call ``super().__init__()`` and define
    ``forward``); it adds numpy weight exchange for distributed actors and a fast, gradient-free
    sync into a target network. ``copy.deepcopy(model)`` gives an independent copy. Weights
    are named as in ``state_dict()``; a ``torch.nn.Linear`` weight is ``[out, in]``, the
    transpose of paddle's (:mod:`parl.core.torch.interop` converts).
    """

    backend_name: ClassVar[str] = "torch"

    def get_weights(self) -> dict[str, np.ndarray]:
        """Return every parameter and buffer as a numpy array, keyed by its structured name."""
        return {name: BACKEND.to_numpy(tensor) for name, tensor in self.state_dict().items()}

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        """Load weights from a dict of arrays (or tensors) such as :meth:`get_weights` returns.

        Names, shapes and value types are checked before anything is written, so a bad dict
        leaves the model unchanged. Values are cast to the parameters' dtypes and copied to
        their device.

        Raises:
            WeightsMismatchError: a name is missing or unexpected, a shape differs, or a value
                is not numeric.
        """
        load_weights(self.state_dict(keep_vars=True), weights, type(self).__name__, BACKEND)

    def sync_weights_to(self, target_model: Model, decay: float = 0.0) -> None:
        """Move ``target_model``'s weights towards this model's (PARL's signature).

        Computes ``target = decay * target + (1 - decay) * self`` for every parameter and
        persistent buffer, under ``no_grad`` (see :func:`parl.core.torch.target.update_target`).

        Args:
            target_model: a model of the same architecture, not this model itself.
            decay: the weight of the target's current value, in ``[0, 1]``.
        """
        if not isinstance(target_model, Model):
            raise TypeError(
                f"target_model must be a parl.core.torch.Model, got {type(target_model).__name__}"
            )
        update_target(self, target_model, decay)
