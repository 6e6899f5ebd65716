"""Exceptions raised by parl-core."""

from __future__ import annotations


class ParlError(Exception):
    """Base class of the errors PARL raises on purpose."""


class UnknownAlgorithmError(ParlError, LookupError, ImportError):
    """No installed plugin provides an algorithm of the requested name.

    A ``LookupError`` for ``parl.algorithms.get(name)``, and an ``ImportError`` so that
    ``from parl.algorithms import DDPG`` inside ``try: ... except ImportError:`` works as the
    usual optional-import idiom.
    """


class PluginLoadError(ParlError, ImportError):
    """A registered plugin (an algorithm or a hook plugin) failed to load or is not valid."""


class DuplicateAlgorithmError(ParlError, LookupError):
    """Two installed distributions register an algorithm under the same name."""


class WeightsMismatchError(ParlError, ValueError):
    """Weights given to a model or algorithm do not fit its parameters (names or shapes)."""


class CheckpointError(ParlError, OSError):
    """A weights or checkpoint file is missing, unreadable, unsafe, or does not fit the agent."""


class ModelContractError(ParlError, TypeError):
    """A model lacks a method that the algorithm needs."""
