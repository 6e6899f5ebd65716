"""Exceptions raised by parl-core."""

from __future__ import annotations


class ParlError(Exception):
    """Base class of the errors PARL raises on purpose."""


class UnknownAlgorithmError(ParlError, LookupError):
    """No installed plugin provides an algorithm of the requested name."""


class PluginLoadError(ParlError, ImportError):
    """A registered algorithm plugin failed to import or is not a valid algorithm."""


class DuplicateAlgorithmError(ParlError, LookupError):
    """Two installed distributions register an algorithm under the same name."""


class WeightsMismatchError(ParlError, ValueError):
    """Weights given to a model or algorithm do not fit its parameters (names or shapes)."""


class CheckpointError(ParlError, OSError):
    """A checkpoint file is missing, truncated, or does not fit the agent."""


class ModelContractError(ParlError, TypeError):
    """A model lacks a method that the algorithm needs."""
