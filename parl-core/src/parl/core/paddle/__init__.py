"""The paddle backend: every module of PARL that imports paddle, and PARL 2.x's import path.

``from parl.core.paddle import Model, Algorithm, Agent`` and the submodules
``parl.core.paddle.{model,algorithm,agent,policy_distribution}`` are the paddle classes, so
code written for PARL 2.x imports unchanged, and a process that selected torch can still use
paddle by this name. The modules mirror :mod:`parl.core.torch`'s (``model``, ``algorithm``,
``agent``, ``ops``, ``target``, ``optim``, ``batch``, ``optimizer_state``, ``backend``,
``rng``, ``tensors``); they are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from parl.core.paddle.agent import Agent
    from parl.core.paddle.algorithm import Algorithm
    from parl.core.paddle.model import Model

__all__ = ["Agent", "Algorithm", "Model"]

_LAZY = {
    "Agent": "parl.core.paddle.agent",
    "Algorithm": "parl.core.paddle.algorithm",
    "Model": "parl.core.paddle.model",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
