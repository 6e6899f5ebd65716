"""``parl.Model``: a ``paddle.nn.Layer`` with weight exchange and target-network sync."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from parl.core import slow_mkl_dispatch
from parl.core.errors import WeightsMismatchError

import numpy as np
import paddle

__all__ = ["Model", "check_shapes"]

if slow_mkl_dispatch():
    logging.getLogger("parl").warning(
        "paddle was imported before parl on an AMD CPU, so its MKL runs slow generic kernels "
        "(Linear layers about 2.4x slower). Import parl before paddle, or set "
        "MKL_DEBUG_CPU_TYPE=5 before starting Python (MKL_DEBUG_CPU_TYPE=0 silences this)."
    )

Shape = tuple[int, ...]


def check_shapes(expected: Mapping[str, Shape], given: Mapping[str, Shape], owner: str) -> None:
    """Raise :class:`WeightsMismatchError` unless ``given`` has exactly the expected shapes.

    Args:
        expected: parameter name to the shape it must have.
        given: parameter name to the shape of the value offered for it.
        owner: what the weights are for, used in the message (e.g. ``"CartpoleModel"``).
    """
    missing = sorted(set(expected) - set(given))
    unexpected = sorted(set(given) - set(expected))
    if missing or unexpected:
        raise WeightsMismatchError(
            f"weights for {owner} do not match its parameters: missing {missing}, "
            f"unexpected {unexpected}; pass the dict returned by get_weights() of the same "
            "architecture"
        )
    for name, shape in expected.items():
        if tuple(given[name]) != tuple(shape):
            raise WeightsMismatchError(
                f"weight {name!r} of {owner} has shape {tuple(given[name])}, "
                f"expected {tuple(shape)}"
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

    def get_weights(self) -> dict[str, np.ndarray]:
        """Return every parameter and buffer as a numpy array, keyed by its structured name."""
        return {name: tensor.numpy() for name, tensor in self.state_dict().items()}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        """Load weights from a dict of arrays such as :meth:`get_weights` returns.

        Names and shapes are checked before anything is written, so a mismatch leaves the model
        unchanged.

        Raises:
            WeightsMismatchError: a name is missing or unexpected, or a shape differs.
        """
        state = self.state_dict()
        check_shapes(
            {name: tuple(tensor.shape) for name, tensor in state.items()},
            {name: np.shape(value) for name, value in weights.items()},
            type(self).__name__,
        )
        with paddle.no_grad():
            for name, tensor in state.items():
                tensor.set_value(np.asarray(weights[name], dtype=tensor.numpy().dtype))

    def sync_weights_to(self, target_model: Model, decay: float = 0.0) -> None:
        """Move ``target_model``'s parameters towards this model's.

        Computes ``target = decay * target + (1 - decay) * self`` for every parameter, under
        ``no_grad``: ``decay=0`` copies, ``decay=1 - tau`` is a Polyak (soft) update.

        Args:
            target_model: a model of the same architecture, not this model itself.
            decay: the weight of the target's current value, in ``[0, 1]``.
        """
        if target_model is self:
            raise ValueError("sync_weights_to needs another model as target, got the model itself")
        if not isinstance(target_model, Model):
            raise TypeError(f"target_model must be a parl.Model, got {type(target_model).__name__}")
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"decay must be in [0, 1], got {decay}")
        pairs = self._parameter_pairs(target_model)
        # In-place ops: one kernel per parameter for a copy, two for a blend (measured fastest
        # of assign / lerp_ / scale_+add_ on paddle 3.3, see benchmarks/core).
        with paddle.no_grad():
            if decay == 0.0:
                for source, target in pairs:
                    # paddle's stub omits copy_'s source argument, which it takes at runtime.
                    target.copy_(source)  # type: ignore[call-arg]
            else:
                for source, target in pairs:
                    target.scale_(decay).add_(source * (1.0 - decay))

    def _parameter_pairs(self, target_model: Model) -> list[tuple[paddle.Tensor, paddle.Tensor]]:
        source = dict(self.named_parameters())
        target = dict(target_model.named_parameters())
        check_shapes(
            {name: tuple(p.shape) for name, p in source.items()},
            {name: tuple(p.shape) for name, p in target.items()},
            type(target_model).__name__,
        )
        return [(source[name], target[name]) for name in source]
