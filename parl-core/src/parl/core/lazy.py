"""Package attributes imported on first use, so that importing a package stays cheap.

A package lists where each public name lives and sets its module ``__getattr__`` (PEP 562) to
:func:`lazy_attributes`; importing ``parl_algos_ac`` then imports neither paddle nor torch until
a class that needs one is asked for. Imports only the standard library.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``name`` from the module
    ``where[name]`` on first use and keeps it in the package, so the next lookup is plain.

    Examples:
        >>> __getattr__ = lazy_attributes("parl.core", {"set_seed": "parl.core.seeding"})
        >>> __getattr__("set_seed").__name__
        'set_seed'
    """

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
