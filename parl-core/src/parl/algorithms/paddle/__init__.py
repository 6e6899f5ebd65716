"""PARL 2.x's import path ``parl.algorithms.paddle``: the registry under its old name.

``from parl.algorithms.paddle import DDPG`` and ``parl.algorithms.paddle.DDPG`` go through the
same registry lookup as ``parl.algorithms.DDPG`` (the class a plugin registers, never a copy);
an unknown name raises the registry's :class:`~parl.core.errors.UnknownAlgorithmError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.algorithms import _lookup, names

if TYPE_CHECKING:
    from parl.core.algorithm import Algorithm

__all__: list[str] = []


def __getattr__(name: str) -> type[Algorithm]:
    if name.startswith("__"):
        raise AttributeError(name)
    return _lookup(name)


def __dir__() -> list[str]:
    return names()
