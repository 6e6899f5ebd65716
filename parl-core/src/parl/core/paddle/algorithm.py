"""``parl.Algorithm`` on paddle: owns models and optimizers, and defines the update rule."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from parl.core.backend import Backend
from parl.core.base import AlgorithmBase, named_attributes
from parl.core.base import check_model_method as _check_model_method
from parl.core.paddle.backend import BACKEND
from parl.core.paddle.model import Model

import paddle

__all__ = ["Algorithm", "check_model_method", "named_attributes"]


def check_model_method(model: Model, method: str, algo: str) -> None:
    """Raise :class:`~parl.core.errors.ModelContractError` unless ``model`` has ``method``.

    ``forward`` counts as implemented only when a subclass overrides ``parl.Model``'s.
    """
    _check_model_method(model, method, algo, Model)


class Algorithm(AlgorithmBase):
    """Base class of learning algorithms on paddle: it owns models and optimizers.

    Subclasses set :attr:`Config` to a :class:`~parl.core.config.AlgorithmConfig` subclass,
    list the model methods they call in :attr:`required_model_methods`, and implement
    :meth:`learn`, :meth:`predict` and, where the policy is stochastic, :meth:`sample`.
    Hyperparameters passed as keyword arguments are validated by the config, so a typo such as
    ``gama=0.9`` or a value such as ``lr=-1`` is a :class:`pydantic.ValidationError` naming the
    field.

    :meth:`get_weights` and :meth:`set_weights` are PARL 2.x's: the flat weights of
    :attr:`model`. :meth:`named_models` and :meth:`named_optimizers` list everything the
    algorithm holds (target networks included), which :meth:`parl.Agent.save_checkpoint` saves
    together with the attributes named in :attr:`checkpoint_state` (tensors among them are
    ``paddle.Tensor``\\ s, loaded in place so optimizers keep them).
    """

    backend: ClassVar[Backend] = BACKEND
    model_class: ClassVar[type] = Model
    model: Any

    def named_models(self) -> Iterator[tuple[str, Model]]:
        """Yield ``(path, model)`` for every model held: ``"model"``, ``"critics.0"``, …."""
        return named_attributes(self, Model)

    def named_optimizers(self) -> Iterator[tuple[str, paddle.optimizer.Optimizer]]:
        """Yield ``(path, optimizer)`` for every optimizer held, found as :meth:`named_models`."""
        return named_attributes(self, paddle.optimizer.Optimizer)

    def _main_model(self) -> Model:
        model: Model = super()._main_model()
        return model
