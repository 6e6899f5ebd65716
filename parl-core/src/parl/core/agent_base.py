"""PARL 2.x's ``parl.core.agent_base``: :class:`AgentBase`, an algorithm's numpy-facing driver.

The framework-free base of PARL 2.x's agents: it holds ``alg`` and passes weight exchange to
it; ``learn``, ``predict``, ``sample``, ``train`` and ``eval`` are for subclasses. The agents
of either backend (``parl.Agent``) add saving, checkpoints and devices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["AgentBase"]


class AgentBase:
    """The base of agents: ``self.alg`` and its weights (PARL 2.x's).

    Args:
        algorithm: the algorithm this agent drives (anything with ``get_weights`` /
            ``set_weights``, e.g. an :class:`~parl.core.algorithm_base.AlgorithmBase`).
    """

    def __init__(self, algorithm: Any) -> None:
        self.alg = algorithm

    def get_weights(self, *args: Any, **kwargs: Any) -> Any:
        """The algorithm's weights (``alg.get_weights``)."""
        return self.alg.get_weights(*args, **kwargs)

    def set_weights(self, weights: Mapping[str, Any], *args: Any, **kwargs: Any) -> None:
        """Load weights into the algorithm (``alg.set_weights``)."""
        self.alg.set_weights(weights, *args, **kwargs)

    def learn(self, *args: Any, **kwargs: Any) -> Any:
        """Convert experience to the algorithm's input and update it."""
        raise NotImplementedError(f"{type(self).__name__} does not implement learn()")

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """The greedy action for an observation."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict()")

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """An exploratory action for an observation."""
        raise NotImplementedError(f"{type(self).__name__} does not implement sample()")

    def train(self, *args: Any, **kwargs: Any) -> None:
        """Put the models in training mode."""
        raise NotImplementedError(f"{type(self).__name__} does not implement train()")

    def eval(self, *args: Any, **kwargs: Any) -> None:
        """Put the models in evaluation mode."""
        raise NotImplementedError(f"{type(self).__name__} does not implement eval()")
