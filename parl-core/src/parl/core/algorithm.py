"""``parl.Algorithm``: owns models and optimizers, and defines the update rule on tensors."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, TypeVar

from parl.core.config import AlgorithmConfig
from parl.core.errors import ModelContractError
from parl.core.model import Model

import numpy as np
import paddle

__all__ = ["Algorithm", "check_model_method", "named_attributes"]

T = TypeVar("T")


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


def named_attributes(owner: object, kind: type[T]) -> Iterator[tuple[str, T]]:
    """Yield ``(path, value)`` for every attribute of ``owner`` that is a ``kind``.

    Attributes are looked at directly and one level down in lists, tuples and dicts
    (``"critics.0"``, ``"heads.policy"``), as PARL 2.x did; an object reachable twice is
    yielded once, under its first path.
    """
    seen: set[int] = set()
    for attr, value in vars(owner).items():
        if isinstance(value, (list, tuple)):
            items: Any = [(f"{attr}.{i}", item) for i, item in enumerate(value)]
        elif isinstance(value, dict):
            items = [(f"{attr}.{key}", item) for key, item in value.items()]
        else:
            items = [(attr, value)]
        for path, item in items:
            if isinstance(item, kind) and id(item) not in seen:
                seen.add(id(item))
                yield path, item


class Algorithm:
    """Base class of learning algorithms: it owns models and optimizers, and works on tensors.

    Subclasses set :attr:`Config` to a :class:`~parl.core.config.AlgorithmConfig` subclass,
    list the model methods they call in :attr:`required_model_methods`, and implement
    :meth:`learn`, :meth:`predict` and, where the policy is stochastic, :meth:`sample`.
    Hyperparameters passed as keyword arguments are validated by the config, so a typo such as
    ``gama=0.9`` or a value such as ``lr=-1`` is a :class:`pydantic.ValidationError` naming the
    field.

    :meth:`get_weights` and :meth:`set_weights` are PARL 2.x's: the flat weights of
    :attr:`model`. :meth:`named_models` and :meth:`named_optimizers` list everything the
    algorithm holds (target networks included), which :meth:`parl.Agent.save_checkpoint` saves
    together with the attributes named in :attr:`checkpoint_state`.
    """

    Config: ClassVar[type[AlgorithmConfig]] = AlgorithmConfig
    required_model_methods: ClassVar[tuple[str, ...]] = ()
    checkpoint_state: ClassVar[tuple[str, ...]] = ()
    """Attributes a training checkpoint saves besides models and optimizers: step counters
    (``int``/``float``/``bool``), learnable scalars and other tensors (``paddle.Tensor``, loaded
    in place so optimizers keep them), numpy arrays and ``numpy.random.Generator``\\ s. A family
    declares them, e.g. ``checkpoint_state = ("log_alpha", "total_it")``."""

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
        return named_attributes(self, Model)

    def named_optimizers(self) -> Iterator[tuple[str, paddle.optimizer.Optimizer]]:
        """Yield ``(path, optimizer)`` for every optimizer held, found as :meth:`named_models`."""
        return named_attributes(self, paddle.optimizer.Optimizer)

    def _main_model(self) -> Model:
        if not isinstance(getattr(self, "model", None), Model):
            raise AttributeError(
                f"{type(self).__name__} holds no `model`, so it has no PARL-style weights; use "
                "named_models() to reach its models, or Agent.save_checkpoint for all of them"
            )
        return self.model  # type: ignore[return-value]

    def get_weights(self) -> dict[str, np.ndarray]:
        """Return the weights of :attr:`model` as ``{name: array}`` (PARL 2.x's contract).

        Names are the model's structured names (``fc1.weight``, ``actor_model.l1.weight``),
        buffers included; target networks are not part of it.
        """
        return self._main_model().get_weights()

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        """Load :meth:`get_weights`' result into :attr:`model`, checking all before writing.

        Raises:
            WeightsMismatchError: a name is missing or unexpected, a shape differs or a value
                is not numeric; nothing is changed then.
        """
        self._main_model().set_weights(weights)
