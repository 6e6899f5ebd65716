"""PARL 2.x's ``parl.core.algorithm_base``: :class:`AlgorithmBase`, weights of every model held.

PARL 2.x's framework-free base of algorithms: :meth:`~AlgorithmBase.get_weights` gathers the
weights of every :class:`~parl.core.model_base.ModelBase` attribute, directly or one level
down in a list, tuple or dict, keyed by attribute name; :meth:`~AlgorithmBase.set_weights`
loads such a dict back. (``parl.Algorithm`` of either backend keeps PARL 2.x's own override:
the flat weights of ``self.model``.) Where PARL asserted, a mismatch here raises
:class:`~parl.core.errors.WeightsMismatchError` naming the attribute, before any model changes.

Examples:
    >>> from parl.core.algorithm_base import AlgorithmBase
    >>> from parl.core.model_base import ModelBase
    >>> class Scalar(ModelBase):
    ...     def __init__(self, value):
    ...         self.value = value
    ...     def get_weights(self):
    ...         return self.value
    ...     def set_weights(self, weights):
    ...         self.value = weights
    >>> class Pair(AlgorithmBase):
    ...     def __init__(self):
    ...         self.actor, self.critics = Scalar(1), [Scalar(2), Scalar(3)]
    >>> Pair().get_weights()
    {'actor': 1, 'critics': [2, 3]}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parl.core.errors import WeightsMismatchError
from parl.core.model_base import ModelBase

__all__ = ["AlgorithmBase"]


class AlgorithmBase:
    """The base of algorithms: weight exchange over every model it holds (PARL 2.x's)."""

    def __init__(self) -> None:
        pass

    def _models(self) -> dict[str, Any]:
        """Every model attribute: a model, or a list / dict of the models in a container."""
        found: dict[str, Any] = {}
        for key, value in vars(self).items():
            if isinstance(value, ModelBase):
                found[key] = value
            elif isinstance(value, (list, tuple)):
                listed = [item for item in value if isinstance(item, ModelBase)]
                if listed:
                    found[key] = listed
            elif isinstance(value, dict):
                keyed = {k: item for k, item in value.items() if isinstance(item, ModelBase)}
                if keyed:
                    found[key] = keyed
        return found

    def get_weights(self) -> dict[str, Any]:
        """Return ``{attribute: weights}``; a list or dict of models gives a list or dict."""
        weights: dict[str, Any] = {}
        for key, held in self._models().items():
            if isinstance(held, list):
                weights[key] = [model.get_weights() for model in held]
            elif isinstance(held, dict):
                weights[key] = {k: model.get_weights() for k, model in held.items()}
            else:
                weights[key] = held.get_weights()
        return weights

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        """Load :meth:`get_weights`' result; the layout is checked before any model changes.

        Raises:
            WeightsMismatchError: an attribute is missing or unexpected, or a list's length or
                a dict's keys differ from the models held; nothing is changed then. If a
                model refuses its weights, the models loaded before it are put back.
        """
        held = self._models()
        _check_layout(held, weights)
        previous = self.get_weights()
        try:
            _load(held, weights)
        except BaseException:
            _load(held, previous)
            raise

    def learn(self, *args: Any, **kwargs: Any) -> Any:
        """Update the models from a batch of experience."""
        raise NotImplementedError(f"{type(self).__name__} does not implement learn()")

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """The greedy output of the policy."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict()")

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """An exploratory output of the policy."""
        raise NotImplementedError(f"{type(self).__name__} does not implement sample()")


def _check_layout(held: Mapping[str, Any], weights: Mapping[str, Any]) -> None:
    missing, unexpected = sorted(set(held) - set(weights)), sorted(set(weights) - set(held))
    if missing or unexpected:
        raise WeightsMismatchError(
            f"the weights do not fit the algorithm's models: missing {missing}, unexpected "
            f"{unexpected}; pass what get_weights() of the same kind of algorithm returns"
        )
    for key, models in held.items():
        given = weights[key]
        if isinstance(models, list) and (not isinstance(given, list) or len(given) != len(models)):
            size = len(given) if isinstance(given, list) else type(given).__name__
            raise WeightsMismatchError(
                f"{key!r} holds {len(models)} models, but its weights are {size}; give a list "
                "with one entry per model"
            )
        if isinstance(models, dict) and (
            not isinstance(given, Mapping) or set(given) != set(models)
        ):
            keys = sorted(given) if isinstance(given, Mapping) else type(given).__name__
            raise WeightsMismatchError(
                f"{key!r} holds the models {sorted(models)}, but its weights are for {keys}"
            )


def _load(held: Mapping[str, Any], weights: Mapping[str, Any]) -> None:
    for key, models in held.items():
        if isinstance(models, list):
            for model, value in zip(models, weights[key], strict=True):
                model.set_weights(value)
        elif isinstance(models, dict):
            for name, model in models.items():
                model.set_weights(weights[key][name])
        else:
            models.set_weights(weights[key])
