"""Which framework PARL runs on, and the small interface its framework-free code is written to.

PARL runs on paddle or on torch. :func:`get_backend` says which: ``PARL_BACKEND=paddle`` or
``PARL_BACKEND=torch`` if set, else the one framework installed (paddle when both are, as in
PARL 2.x). ``parl.Model``, ``parl.Algorithm``, ``parl.Agent``, ``parl.set_seed`` and
``parl.algorithms.get`` follow it; ``parl.core.paddle`` and ``parl.core.torch`` name either
explicitly, so one process may use both.

Checkpoints, weight checks and the registry are written once; what they need from a framework
is a :class:`Backend`: tensors to numpy and back, optimizer state and random states. Each
framework's package builds one (``parl.core.paddle.backend.BACKEND``,
``parl.core.torch.backend.BACKEND``). This module imports neither framework.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from parl.core.errors import INSTALL, BackendError, framework_missing

import numpy as np

__all__ = [
    "BACKENDS",
    "ENV_VAR",
    "Backend",
    "get_backend",
    "import_framework_module",
    "installed_frameworks",
    "load_backend",
]

BACKENDS = ("paddle", "torch")
"""The frameworks PARL runs on, in the order of preference when both are installed."""
ENV_VAR = "PARL_BACKEND"

Apply = Callable[[], None]


@functools.lru_cache(maxsize=1)
def installed_frameworks() -> tuple[str, ...]:
    """The frameworks of :data:`BACKENDS` that can be imported here (none is imported)."""
    return tuple(name for name in BACKENDS if _importable(name))


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ValueError:  # a module set to None in sys.modules
        return False


def get_backend() -> str:
    """Return the framework PARL uses in this process: ``"paddle"`` or ``"torch"``.

    ``PARL_BACKEND`` decides when set; otherwise the one framework installed, paddle when both
    are. Reading it imports neither framework.

    Raises:
        BackendError: ``PARL_BACKEND`` names something else, or neither framework is installed
            (the message gives the ``pip install`` line of each).
    """
    chosen = os.environ.get(ENV_VAR, "").strip().lower()
    if chosen:
        if chosen not in BACKENDS:
            raise BackendError(
                f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not a PARL backend; set it to one of "
                f"{', '.join(BACKENDS)}, or unset it to use the framework that is installed"
            )
        return chosen
    found = installed_frameworks()
    if not found:
        raise BackendError(
            "PARL needs paddle or torch, and neither is installed. For paddle: "
            f"{INSTALL['paddle']}. For torch: {INSTALL['torch']}."
        )
    return found[0]


@dataclass(frozen=True)
class Backend:
    """What PARL's framework-free code (checkpoints, weight checks) needs from a framework.

    Attributes:
        name: ``"paddle"`` or ``"torch"``; also the key of its random state in a checkpoint.
        tensor_type: the framework's tensor class.
        optimizer_type: the base class of its optimizers.
        to_numpy: a tensor's values as a numpy array on the host (the one conversion).
        numpy_dtype: the numpy dtype of a tensor's values, without copying them.
        assign: write a numpy array into a tensor in place, without gradients.
        optimizer_state: ``(optimizer, names, owner) -> (arrays, info)``: the optimizer's
            state as arrays keyed ``"<parameter name>/<slot>"`` and JSON; ``names`` maps
            ``id(parameter)`` to its name in the checkpoint.
        plan_optimizer_restore: ``(optimizer, names, owner, arrays, info) -> apply``: checks a
            saved state in full; the returned function applies it.
        capture_rng: the framework's random state as ``(arrays, json)``.
        plan_rng: ``(json, arrays) -> apply``: checks a saved random state in full.
        seed: seed the framework's generators.
    """

    name: str
    tensor_type: type
    optimizer_type: type
    to_numpy: Callable[[Any], np.ndarray]
    numpy_dtype: Callable[[Any], np.dtype]
    assign: Callable[[Any, np.ndarray], None]
    optimizer_state: Callable[
        [Any, Mapping[int, str], str], tuple[dict[str, np.ndarray], dict[str, Any]]
    ]
    plan_optimizer_restore: Callable[
        [Any, Mapping[int, str], str, Mapping[str, np.ndarray], Mapping[str, Any]], Apply
    ]
    capture_rng: Callable[[], tuple[dict[str, np.ndarray], Any]]
    plan_rng: Callable[[Any, Mapping[str, np.ndarray]], Apply]
    seed: Callable[[int], None]


def import_framework_module(name: str, module: str) -> ModuleType:
    """Import ``parl.core.<name>.<module>``, one of framework ``name``'s modules.

    Raises:
        BackendError: ``name`` is not a backend, or its framework is not installed (the
            message gives the ``pip install`` line).
    """
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; PARL's backends are {', '.join(BACKENDS)}")
    try:
        return importlib.import_module(f"parl.core.{name}.{module}")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == name:
            raise BackendError(framework_missing(name, f"PARL's {name} backend")) from exc
        raise


def load_backend(name: str) -> Backend:
    """Import and return the :class:`Backend` of framework ``name``.

    Raises:
        BackendError: ``name`` is not a backend, or its framework is not installed.
    """
    backend: Backend = import_framework_module(name, "backend").BACKEND
    return backend
