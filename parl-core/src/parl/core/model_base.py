"""PARL 2.x's ``parl.core.model_base``: :class:`ModelBase`, what every ``parl.Model`` is.

PARL 2.x's framework-free code (``AlgorithmBase``'s weight exchange over several models, its
unit tests' mock models) recognises a model as an instance of ``ModelBase``. Plain Python
classes subclass it; the paddle and torch ``parl.Model`` count as ``ModelBase`` too (as in
PARL 2.x, where they inherit from it) without this module importing either framework.
"""

from __future__ import annotations

import abc
import importlib
import sys
from typing import Any

__all__ = ["ModelBase"]


def _framework_models() -> tuple[type, ...]:
    """The ``parl.Model`` of each backend whose module is loaded (no model of another exists)."""
    parl = importlib.import_module("parl")
    modules = (sys.modules.get(name) for name in parl._BACKEND_CLASSES["Model"].values())
    return tuple(module.Model for module in modules if module is not None)


class ModelBase(abc.ABC):  # noqa: B024  (PARL's base: every method has a default)
    """The base of models: ``forward``, weights as PARL 2.x defines them, ``model(x)`` calls it.

    Subclasses implement :meth:`forward` and, for weight exchange, :meth:`get_weights` and
    :meth:`set_weights`.
    """

    @classmethod
    def __subclasshook__(cls, other: type) -> Any:
        if cls is ModelBase and issubclass(other, _framework_models()):
            return True
        return NotImplemented

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The model's computation."""
        raise NotImplementedError(f"{type(self).__name__} does not implement forward()")

    def get_weights(self, *args: Any, **kwargs: Any) -> Any:
        """The model's weights."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_weights()")

    def set_weights(self, weights: Any, *args: Any, **kwargs: Any) -> None:
        """Load weights given by :meth:`get_weights`."""
        raise NotImplementedError(f"{type(self).__name__} does not implement set_weights()")

    def sync_weights_to(self, other_model: Any) -> None:
        """Copy this model's weights into ``other_model``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement sync_weights_to()")

    def parameters(self) -> Any:
        """The model's trainable parameters."""
        raise NotImplementedError(f"{type(self).__name__} does not implement parameters()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)
