"""PARL 2.x's ``parl.utils.tensorboard``: the summary writer under its old module name.

PARL 2.x programs write ``from parl.utils import tensorboard`` and call
``tensorboard.add_scalar(tag, value, step)``; here those calls are :mod:`parl.utils.summary`'s,
so they reach every installed metric sink (TensorBoard's among them) in the logger's directory.

Examples:
    >>> from parl.utils import tensorboard
    >>> tensorboard.add_scalar("train/episode_reward", 21.0, 100)
    >>> tensorboard.flush()
"""

from __future__ import annotations

from parl.utils.summary import add_histogram, add_scalar, close, flush

__all__ = ["add_histogram", "add_scalar", "close", "flush"]
