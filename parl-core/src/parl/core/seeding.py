"""One call to seed every random number generator a PARL program uses."""

from __future__ import annotations

import random

from parl.core.validation import non_negative_int

import numpy as np
import paddle


def set_seed(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and paddle with ``seed``."""
    seed = non_negative_int("seed", seed)
    random.seed(seed)
    np.random.seed(seed)
    paddle.seed(seed)
