"""PARL 2.x's import path ``parl.core.paddle``: the same classes as :mod:`parl`, under old names.

``from parl.core.paddle import Model, Algorithm, Agent`` and the submodules
``parl.core.paddle.{model,algorithm,agent,policy_distribution}`` resolve to this package's
classes (aliases, not copies), so code written for PARL 2.x imports unchanged.
"""

from parl.core.agent import Agent
from parl.core.algorithm import Algorithm
from parl.core.model import Model

__all__ = ["Agent", "Algorithm", "Model"]
