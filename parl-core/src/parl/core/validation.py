"""Integer arguments checked by pydantic, with messages that name the argument.

Counts and sizes accept Python and numpy integers; booleans, floats and strings are refused
rather than coerced, so ``act_dim=True`` or ``epochs=2.5`` is an error, not a surprise. This
module imports no paddle, so every PARL package can use it.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError

__all__ = ["non_negative_int", "positive_int"]


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a count")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError("not an integer") from None


_POSITIVE = TypeAdapter(Annotated[int, BeforeValidator(_as_int), Field(gt=0)])
_NON_NEGATIVE = TypeAdapter(Annotated[int, BeforeValidator(_as_int), Field(ge=0)])


def _check(adapter: TypeAdapter[int], bound: str, name: str, value: Any) -> int:
    try:
        return adapter.validate_python(value)
    except ValidationError:
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}") from None


def positive_int(name: str, value: Any) -> int:
    """Return ``value`` as an ``int`` if it is an integer > 0, else raise ``ValueError``.

    Examples:
        >>> positive_int("act_dim", 2)
        2
        >>> positive_int("act_dim", 0)
        Traceback (most recent call last):
        ValueError: act_dim must be an integer > 0, got 0
    """
    return _check(_POSITIVE, "> 0", name, value)


def non_negative_int(name: str, value: Any) -> int:
    """Return ``value`` as an ``int`` if it is an integer >= 0, else raise ``ValueError``."""
    return _check(_NON_NEGATIVE, ">= 0", name, value)
