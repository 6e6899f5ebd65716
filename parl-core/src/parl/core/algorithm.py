"""``parl.Algorithm``: owns models and optimizers, and defines the update rule on tensors."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from parl.core.config import AlgorithmConfig
from parl.core.errors import ModelContractError, WeightsMismatchError
from parl.core.model import Model, check_shapes

import numpy as np

__all__ = ["Algorithm", "check_model_method"]


def check_model_method(model: Model, method: str, algo: str) -> None:
    """Raise :class:`ModelContractError` unless ``model`` implements ``method``.

    ``forward`` counts as implemented only when a subclass overrides ``parl.Model``'s.
    """
    attr = getattr(type(model), method, None)
    inherited = method == "forward" and attr is getattr(Model, "forward", None)
    if attr is None or not callable(attr) or inherited:
        raise ModelContractError(
            f"{algo} needs its model to implement {method!r}, but {type(model).__name__} "
            f"does not; define `def {method}(self, obs): ...` on your parl.Model subclass"
        )


class Algorithm:
    """Base class of learning algorithms: it owns models and optimizers, and works on tensors.

    Subclasses set :attr:`Config` to a :class:`~parl.core.config.AlgorithmConfig` subclass,
    list the model methods they call in :attr:`required_model_methods`, and implement
    :meth:`learn`, :meth:`predict` and, where the policy is stochastic, :meth:`sample`.
    Hyperparameters passed as keyword arguments are validated by the config, so a typo such as
    ``gama=0.9`` or a value such as ``lr=-1`` is a :class:`pydantic.ValidationError` naming the
    field.

    :meth:`get_weights` and :meth:`set_weights` cover every :class:`~parl.Model` the algorithm
    holds as an attribute (directly, or one level down in a list, tuple or dict), target
    networks included.
    """

    Config: ClassVar[type[AlgorithmConfig]] = AlgorithmConfig
    required_model_methods: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        model: Model | None = None,
        *,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is not None:
            self._check_model(model)
        self.model = model
        self.config = self.Config.build(config, **options)

    def _check_model(self, model: Model) -> None:
        name = type(self).__name__
        if not isinstance(model, Model):
            raise TypeError(f"{name} needs a parl.Model, got {type(model).__name__}")
        for method in self.required_model_methods:
            check_model_method(model, method, name)

    def learn(self, *args: Any, **kwargs: Any) -> Any:
        """Update the models from a batch of experience (tensors) and return the losses."""
        raise NotImplementedError(f"{type(self).__name__} does not implement learn()")

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Return the greedy (evaluation) output of the policy for a batch of observations."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict()")

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """Return an exploratory output of the policy for a batch of observations."""
        raise NotImplementedError(f"{type(self).__name__} does not implement sample()")

    def named_models(self) -> Iterator[tuple[str, Model]]:
        """Yield ``(path, model)`` for every model held: ``"model"``, ``"critics.0"``, …."""
        for attr, value in vars(self).items():
            if isinstance(value, Model):
                yield attr, value
            elif isinstance(value, (list, tuple)):
                for index, item in enumerate(value):
                    if isinstance(item, Model):
                        yield f"{attr}.{index}", item
            elif isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(item, Model):
                        yield f"{attr}.{key}", item

    def get_weights(self) -> dict[str, dict[str, np.ndarray]]:
        """Return the weights of every model held, keyed by its path (see :meth:`named_models`)."""
        return {path: model.get_weights() for path, model in self.named_models()}

    def set_weights(self, weights: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        """Load weights shaped like :meth:`get_weights`' result, checking all before writing any.

        Raises:
            WeightsMismatchError: a model path or a parameter is missing, unexpected or of
                another shape; nothing is changed then.
        """
        models = dict(self.named_models())
        if set(weights) != set(models):
            raise WeightsMismatchError(
                f"weights for {type(self).__name__} cover models {sorted(weights)}, "
                f"but it holds {sorted(models)}"
            )
        for path, model in models.items():
            check_shapes(
                {name: tuple(t.shape) for name, t in model.state_dict().items()},
                {name: np.shape(value) for name, value in weights[path].items()},
                f"{type(self).__name__}.{path}",
            )
        for path, model in models.items():
            model.set_weights(weights[path])
