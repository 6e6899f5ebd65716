"""PARL 2.x's import path ``parl.algorithms.torch``: the torch registry under its old name.

``from parl.algorithms.torch import DQN`` and ``parl.algorithms.torch.DQN`` go through the
registry lookup as ``parl.algorithms.get("DQN", backend="torch")`` (the class a plugin
registers, never a copy), whichever backend is selected; an unknown name raises the registry's
:class:`~parl.core.errors.UnknownAlgorithmError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.algorithms import _lookup, names

if TYPE_CHECKING:
    from parl.core.base import AlgorithmBase as Algorithm

__all__: list[str] = []


def __getattr__(name: str) -> type[Algorithm]:
    if name.startswith("__"):
        raise AttributeError(name)
    return _lookup(name, "torch")


def __dir__() -> list[str]:
    return names("torch")
