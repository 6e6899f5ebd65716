"""Integer arguments checked by pydantic, with messages that name the argument.

Counts accept Python and numpy integers; booleans, floats and strings are refused rather than
coerced, so ``max_size=True`` or ``batch_size=32.5`` is an error, not a surprise.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
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


def _integer_check(bound: str, **constraint: int) -> Callable[[str, object], int]:
    adapter = TypeAdapter(Annotated[int, BeforeValidator(_integer), Field(**constraint)])

    def check(name: str, value: object) -> int:
        try:
            return adapter.validate_python(value)
        except ValidationError:
            raise ValueError(f"{name} must be an integer {bound}, got {value!r}") from None

    check.__doc__ = f"Return ``value`` as an int if it is an integer {bound}, else a ValueError."
    return check


positive_int = _integer_check("> 0", gt=0)
non_negative_int = _integer_check(">= 0", ge=0)
