"""PARL: a reinforcement-learning framework of Model / Algorithm / Agent abstractions.

``import parl`` is light: it loads neither paddle, torch, pyzmq nor any plugin. The classes of
the selected backend (``parl.Model``, ``parl.Algorithm``, ``parl.Agent``, ``parl.set_seed``;
:func:`get_backend` says which framework: ``PARL_BACKEND``, else the one installed, paddle
when both are) and the distributed API (``parl.remote_class``, ``parl.connect``, from the
``parl-remote`` distribution) resolve on first use; a missing dependency raises an error naming
what to ``pip install``.
"""

__path__ = __import__("pkgutil").extend_path(__path__, __name__)


import importlib
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from parl._version import __version__
from parl.core.backend import get_backend
from parl.core.errors import framework_missing as _framework_missing
from parl.core.paddle.mkl import prefer_fast_mkl_kernels as _prefer_fast_mkl_kernels
from parl.core.paddle.mkl import quiet_paddle as _quiet_paddle
from parl.plugins import hookimpl

_prefer_fast_mkl_kernels()
_quiet_paddle()

if TYPE_CHECKING:
    from parl import algorithms
    from parl.core.paddle.agent import Agent
    from parl.core.paddle.algorithm import Algorithm
    from parl.core.paddle.model import Model
    from parl.core.seeding import set_seed
    from parl.remote import connect, remote_class

__all__ = [
    "Agent",
    "Algorithm",
    "Model",
    "__version__",
    "algorithms",
    "connect",
    "get_backend",
    "hookimpl",
    "remote_class",
    "set_seed",
]

# The selected backend's classes: name -> backend -> module.
_BACKEND_CLASSES: dict[str, dict[str, str]] = {
    "Model": {"paddle": "parl.core.paddle.model", "torch": "parl.core.torch.model"},
    "Algorithm": {"paddle": "parl.core.paddle.algorithm", "torch": "parl.core.torch.algorithm"},
    "Agent": {"paddle": "parl.core.paddle.agent", "torch": "parl.core.torch.agent"},
}
# name -> (module, attribute): the distributed API needs parl-remote.
_LAZY: dict[str, tuple[str, str]] = {
    "set_seed": ("parl.core.seeding", "set_seed"),
    "remote_class": ("parl.remote", "remote_class"),
    "connect": ("parl.remote", "connect"),
}

_SUBMODULES = {"algorithms", "plugins", "testing", "utils", "env", "remote", "core"}


def __getattr__(name: str) -> Any:
    if name in _BACKEND_CLASSES or name in _LAZY:
        if name in _BACKEND_CLASSES:
            module_name, attribute = _BACKEND_CLASSES[name][get_backend()], name
        else:
            module_name, attribute = _LAZY[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or module_name
            if missing.split(".")[0] in ("paddle", "torch"):
                framework = missing.split(".")[0]
                raise ImportError(_framework_missing(framework, f"parl.{name}")) from exc
            if missing == "parl.remote" or missing.split(".")[0] == "zmq":
                raise ImportError(
                    f"parl.{name} needs the distribution 'parl-remote', which is not installed "
                    f"(missing module {missing!r}): {_install_advice('parl-remote')}"
                ) from exc
            raise
        value = getattr(module, attribute)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"parl.{name}")
    raise AttributeError(f"module 'parl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# The parts of the ``parl`` namespace that other distributions ship.
_SHIPPED_BY = {"parl.utils": "parl-utils", "parl.env": "parl-utils", "parl.remote": "parl-remote"}


def _install_advice(distribution: str) -> str:
    """How to install ``distribution`` while PARL is not on a package index, and after."""
    return (
        f"from a clone of the PARL repository, pip install ./{distribution} "
        f"(once PARL is published: pip install {distribution})"
    )


class _MissingDistributionFinder:
    """Last on ``sys.meta_path``: ``import parl.utils`` (``parl.env``, ``parl.remote``) that no
    other finder resolved raises an error naming the distribution to install, instead of
    Python's bare ``No module named 'parl.utils'``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        distribution = _SHIPPED_BY.get(fullname)
        if distribution is None:
            return None
        # An import hook added after this one (an editable install's) still gets its turn.
        for finder in sys.meta_path[sys.meta_path.index(self) + 1 :]:
            spec = getattr(finder, "find_spec", lambda *_: None)(fullname, path, target)
            if spec is not None:
                return spec
        raise ModuleNotFoundError(
            f"{fullname} comes with the distribution {distribution!r}, which is not installed: "
            f"{_install_advice(distribution)}",
            name=fullname,
        )


if not any(isinstance(f, _MissingDistributionFinder) for f in sys.meta_path):
    sys.meta_path.append(_MissingDistributionFinder())
