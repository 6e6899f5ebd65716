"""``parl.Algorithm`` on torch: owns models and optimizers, on one device."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from parl.core.backend import Backend
from parl.core.base import AlgorithmBase, named_attributes
from parl.core.base import check_model_method as _check_model_method
from parl.core.torch.backend import BACKEND
from parl.core.torch.model import Model
from parl.core.torch.ops import move_algorithm

import torch

__all__ = ["Algorithm", "check_model_method"]


def check_model_method(model: Model, method: str, algo: str) -> None:
    """Raise :class:`~parl.core.errors.ModelContractError` unless ``model`` has ``method``."""
    _check_model_method(model, method, algo, Model)


class Algorithm(AlgorithmBase):
    """Base class of learning algorithms on torch: it owns models and optimizers.

    As the paddle ``parl.Algorithm`` (a pydantic ``Config``, ``required_model_methods``,
    ``checkpoint_state``, PARL 2.x's ``get_weights``/``set_weights``), plus a :attr:`device`:
    subclasses build their optimizers over the models' parameters and move their inputs to
    ``self.device``; :meth:`to` (called by ``Agent(..., device=...)``) moves every model and
    every tensor named in ``checkpoint_state`` there, in place, so optimizers built before keep
    working.
    """

    backend: ClassVar[Backend] = BACKEND
    model_class: ClassVar[type] = Model
    model: Any
    device: torch.device = torch.device("cpu")

    def named_models(self) -> Iterator[tuple[str, Model]]:
        """Yield ``(path, model)`` for every model held: ``"model"``, ``"critics.0"``, …."""
        return named_attributes(self, Model)

    def named_optimizers(self) -> Iterator[tuple[str, torch.optim.Optimizer]]:
        """Yield ``(path, optimizer)`` for every optimizer held, found as :meth:`named_models`."""
        return named_attributes(self, torch.optim.Optimizer)

    def _main_model(self) -> Model:
        model: Model = super()._main_model()
        return model

    def to(self, device: str | torch.device) -> Algorithm:
        """Move every model, optimizer slot and ``checkpoint_state`` tensor to ``device``.

        Raises:
            ValueError: ``device`` is not a device this torch can use (e.g. ``"cuda"`` on a
                CPU build or without a GPU); nothing is moved then.
        """
        self.device = move_algorithm(self, device)
        return self
