"""Integer arguments checked by pydantic: counts are ints, not bools, floats or strings."""

from __future__ import annotations

from parl.core.validation import non_negative_int, positive_int

import numpy as np
import pytest


def test_integers_pass_as_python_ints() -> None:
    assert positive_int("n", np.int32(3)) == 3 and type(positive_int("n", np.int64(3))) is int
    assert non_negative_int("seed", 0) == 0


@pytest.mark.parametrize("value", [0, -2, True, 2.0, "3", None])
def test_anything_else_names_the_argument(value) -> None:
    with pytest.raises(ValueError, match=rf"act_dim must be an integer > 0, got {value!r}"):
        positive_int("act_dim", value)


def test_negative_is_not_non_negative() -> None:
    with pytest.raises(ValueError, match=r"seed must be an integer >= 0, got -1"):
        non_negative_int("seed", -1)
