"""Exceptions raised by parl-core."""

from __future__ import annotations

INSTALL = {
    "paddle": (
        "install the CPU build with pip install paddlepaddle (or the extra parl-core[paddle]), "
        "or the GPU build paddlepaddle-gpu for your CUDA version as paddle's installation guide "
        "says"
    ),
    "torch": (
        "install it with pip install torch (or the extra parl-core[torch]); for a GPU, the "
        "CUDA build that PyTorch's install selector gives for your machine"
    ),
}
"""How to install each framework PARL runs on, for error messages."""


def framework_missing(framework: str, what: str) -> str:
    """The message for ``what`` needing ``framework`` (``"paddle"``/``"torch"``), not installed.

    Either distribution of paddle serves, so paddle's message names both: nothing in PARL
    requires the CPU wheel by name, which would install it beside a GPU one.
    """
    return f"{what} needs {framework}, which is not installed: {INSTALL[framework]}"


def paddle_missing(what: str) -> str:
    """The message for ``what`` needing paddle when no paddle is installed."""
    return framework_missing("paddle", what)


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


class DatasetError(ParlError, ValueError):
    """An offline dataset (a D4RL HDF5 file, a Minari dataset, a dataset dict) is unreadable,
    unsafe (it points at other files, declares more than it holds) or malformed."""


class ModelContractError(ParlError, TypeError):
    """A model lacks a method that the algorithm needs."""


class BackendError(ParlError, ImportError):
    """No usable framework: ``PARL_BACKEND`` names none, or the one it names is missing."""
