"""Integer arguments checked by pydantic, with messages that name the argument.

Counts accept Python and numpy integers; booleans, floats and strings are refused rather than
coerced, so ``max_size=True`` or ``batch_size=32.5`` is an error, not a surprise.
"""

from __future__ import annotations

import operator
from typing import Annotated

from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError

__all__ = ["non_negative_int", "positive_int"]


def _integer(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a count")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError("not an integer") from None


_POSITIVE = TypeAdapter(Annotated[int, BeforeValidator(_integer), Field(gt=0)])
_NON_NEGATIVE = TypeAdapter(Annotated[int, BeforeValidator(_integer), Field(ge=0)])


def positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int if it is an integer > 0.

    Raises:
        ValueError: naming ``name`` and the value otherwise.
    """
    try:
        return _POSITIVE.validate_python(value)
    except ValidationError:
        raise ValueError(f"{name} must be an integer > 0, got {value!r}") from None


def non_negative_int(name: str, value: object) -> int:
    """Return ``value`` as an int if it is an integer >= 0.

    Raises:
        ValueError: naming ``name`` and the value otherwise.
    """
    try:
        return _NON_NEGATIVE.validate_python(value)
    except ValidationError:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}") from None
