"""PARL 2.x's ``parl.utils.visualdl``: the summary writer under its other old module name.

PARL 2.x programs (its AlphaZero example) write ``from parl.utils import visualdl`` and call
``visualdl.add_scalar(tag, value, step)``. Here those calls are :mod:`parl.utils.summary`'s:
the values reach every installed metric sink (TensorBoard event files and CSV by default), not
VisualDL's own file format.

Examples:
    >>> from parl.utils import visualdl
    >>> visualdl.add_scalar("perfect_moves_rate", 0.5, 1)
    >>> visualdl.flush()
"""

from __future__ import annotations

from parl.utils.summary import add_histogram, add_scalar, close, flush

__all__ = ["add_histogram", "add_scalar", "close", "flush"]
