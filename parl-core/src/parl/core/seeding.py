"""One call to seed every random number generator a PARL program uses."""

from __future__ import annotations

import random
import sys

from parl.core.backend import BACKENDS, get_backend, load_backend
from parl.core.validation import non_negative_int

import numpy as np

__all__ = ["set_seed"]


def set_seed(seed: int, backend: str | None = None) -> None:
    """Seed Python's ``random``, NumPy's global generator and the framework(s) with ``seed``.

    The framework is ``backend`` (the selected one, :func:`parl.get_backend`, by default);
    the other framework is seeded too when it is already imported, so that a process using
    both draws the same on every run.
    """
    seed = non_negative_int("seed", seed)
    random.seed(seed)
    np.random.seed(seed)
    chosen = backend or get_backend()
    for name in BACKENDS:
        if name == chosen or name in sys.modules:
            load_backend(name).seed(seed)
