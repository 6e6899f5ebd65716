"""One call to seed every random number generator a PARL program uses."""

from __future__ import annotations

import random

import numpy as np
import paddle


def set_seed(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and paddle with ``seed``."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed)
    paddle.seed(seed)
