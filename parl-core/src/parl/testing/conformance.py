"""A conformance check that an algorithm class behaves as PARL's registry and agents expect."""

from __future__ import annotations

import copy
from collections.abc import Callable

from parl.algorithms._registry import validate_algorithm_class
from parl.core.base import AlgorithmBase as Algorithm
from parl.core.errors import WeightsMismatchError

import numpy as np
import pydantic


class ConformanceError(AssertionError):
    """An algorithm class breaks a rule of the plugin contract; the message says which."""


def _fail(cls: type, rule: str) -> ConformanceError:
    return ConformanceError(f"{cls.__name__}: {rule}")


def check_algorithm(
    cls: type[Algorithm], make_algorithm: Callable[[], Algorithm] | None = None
) -> None:
    """Check ``cls`` against the plugin contract; raise :class:`ConformanceError` on a breach.

    Class checks: a ``parl.Algorithm`` subclass with a docstring, a pydantic ``Config`` that
    forbids unknown fields, is frozen and documents every field. With ``make_algorithm``
    (a zero-argument factory of a small instance), also: it holds its network as ``model``,
    ``get_weights`` is the flat weights of that model (PARL's contract) and round-trips through
    ``set_weights``, a wrongly shaped weight or a string array is refused without changing
    anything, and a deep copy is independent.

    Args:
        cls: the algorithm class, as ``parl.algorithms.get`` would return it.
        make_algorithm: builds an instance of ``cls`` for the instance checks.
    """
    validate_algorithm_class(cls, cls.__qualname__)
    _check_class(cls)
    if make_algorithm is not None:
        algorithm = make_algorithm()
        if not isinstance(algorithm, cls):
            raise _fail(cls, f"make_algorithm returned a {type(algorithm).__name__}")
        _check_instance(cls, algorithm)


def _check_class(cls: type[Algorithm]) -> None:
    if not (cls.__doc__ or "").strip():
        raise _fail(cls, "the class needs a docstring starting with the algorithm's full name")
    config = cls.Config
    settings = config.model_config
    if settings.get("extra") != "forbid":
        raise _fail(cls, "Config must set extra='forbid' so that typos are errors")
    if not settings.get("frozen"):
        raise _fail(cls, "Config must be frozen")
    undocumented = [name for name, f in config.model_fields.items() if not f.description]
    if undocumented:
        raise _fail(cls, f"Config fields without a docstring: {undocumented}")
    try:
        config.model_validate({"surely_not_a_field": 1})
    except pydantic.ValidationError:
        pass
    else:
        raise _fail(cls, "Config accepted an unknown field")


def _check_instance(cls: type[Algorithm], algorithm: Algorithm) -> None:
    models = dict(algorithm.named_models())
    if not models:
        raise _fail(cls, "the instance holds no parl.Model")
    if "model" not in models:
        raise _fail(cls, "the instance has no `model` attribute (PARL's get_weights contract)")
    weights = algorithm.get_weights()
    if set(weights) != set(models["model"].get_weights()):
        raise _fail(cls, "get_weights() is not the flat weights of algorithm.model")
    algorithm.set_weights(weights)
    # The last entry is the bad one, so that a writer that checks as it goes has written others.
    name, value = list(weights.items())[-1]
    for bad, what in (
        (np.zeros((*value.shape, 2), dtype=value.dtype), "a weight of the wrong shape"),
        (np.full(value.shape, "x"), "a string array"),
    ):
        # Every other entry changes too: a refusal must leave all of them as they were.
        broken = {key: array + 1 for key, array in weights.items()}
        broken[name] = bad
        try:
            algorithm.set_weights(broken)
        except WeightsMismatchError:
            pass
        except Exception as exc:
            raise _fail(
                cls,
                f"set_weights with {what} raised {type(exc).__name__}, not a clear "
                "WeightsMismatchError",
            ) from exc
        else:
            raise _fail(cls, f"set_weights accepted {what}")
        if any(not np.array_equal(algorithm.get_weights()[k], v) for k, v in weights.items()):
            raise _fail(cls, f"set_weights with {what} changed some weights before refusing")
    clone = copy.deepcopy(algorithm)
    clone.set_weights({k: v + 1 for k, v in weights.items()})
    if any(not np.array_equal(algorithm.get_weights()[k], v) for k, v in weights.items()):
        raise _fail(cls, "a deep copy shares weights with the original")
