"""The paddle backend, and PARL 2.x's import path ``parl.core.paddle``.

``from parl.core.paddle import Model, Algorithm, Agent`` and the submodules
``parl.core.paddle.{model,algorithm,agent,policy_distribution}`` resolve to the paddle classes
(aliases of :mod:`parl.core.model` and its siblings, not copies), so code written for PARL 2.x
imports unchanged, and a process that selected torch can still use paddle by this name. They
are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from parl.core.agent import Agent
    from parl.core.algorithm import Algorithm
    from parl.core.model import Model

__all__ = ["Agent", "Algorithm", "Model"]

_LAZY = {
    "Agent": "parl.core.agent",
    "Algorithm": "parl.core.algorithm",
    "Model": "parl.core.model",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
