"""PARL 2.x's ``parl.utils.utils``: small helpers that PARL's algorithms and examples import.

:func:`check_model_method` is parl-core's (paddle loads on its first call) and raises
:class:`~parl.core.errors.ModelContractError`, a ``TypeError``, where PARL asserted.
``_HAS_PADDLE``/``_HAS_TORCH`` say whether the framework is installed, found without importing
it (PARL imported both in a forked process).
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
from importlib import metadata
from typing import Any

from parl.core.errors import paddle_missing

__all__ = [
    "MAX_INT32",
    "_HAS_FLUID",
    "_HAS_PADDLE",
    "_HAS_TORCH",
    "_IS_MAC",
    "_IS_WINDOWS",
    "check_model_method",
    "check_version_for_fluid",
    "check_version_for_xpu",
    "get_fluid_version",
    "has_func",
    "isnotebook",
    "kill_process",
    "to_byte",
    "to_str",
]

MAX_INT32 = 0x7FFFFFFF
_IS_WINDOWS = sys.platform == "win32"
_IS_MAC = sys.platform == "darwin"
_HAS_PADDLE = importlib.util.find_spec("paddle") is not None
_HAS_TORCH = importlib.util.find_spec("torch") is not None
_HAS_FLUID = False
"""paddle's 1.x ``fluid`` API: gone from the paddle 3 that this package runs on."""

_VERSION_DIGITS = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


def has_func(obj: object, name: str) -> bool:
    """Whether ``obj`` has a callable attribute ``name``."""
    return callable(getattr(obj, name, None))


def to_str(data: bytes) -> str:
    """Decode UTF-8 ``bytes`` to ``str``."""
    return data.decode()


def to_byte(text: str) -> bytes:
    """Encode ``str`` to UTF-8 ``bytes``."""
    return text.encode()


def get_fluid_version() -> int:
    """The installed paddle's version as PARL wrote it: ``"3.0.0"`` gives ``300``.

    Raises:
        ImportError: if paddle is not installed.
    """
    try:
        version = metadata.version("paddlepaddle")
    except metadata.PackageNotFoundError:
        try:
            version = metadata.version("paddlepaddle-gpu")
        except metadata.PackageNotFoundError:
            raise ImportError(paddle_missing("get_fluid_version")) from None
    match = _VERSION_DIGITS.match(version)
    if match is None:
        raise ValueError(f"cannot read paddle's version {version!r}")
    return int("".join(match.groups()))


def check_version_for_xpu() -> None:
    """Raise ``RuntimeError`` unless the installed paddle (>= 2.0) can run PARL on XPU."""
    version = get_fluid_version()
    if 0 < version < 200:
        raise RuntimeError(f"running on XPU needs paddle >= 2.0.0, found version code {version}")


def check_version_for_fluid() -> None:
    """Raise ``RuntimeError`` unless paddle is 1.8.5 - 1.x, as PARL's fluid-based examples need.

    This package runs on paddle 3, so code that calls this must be ported to the 2.x API
    (``parl.Model`` is a ``paddle.nn.Layer``).
    """
    version = get_fluid_version()
    if not 185 <= version < 200:
        raise RuntimeError(
            f"fluid-based code needs paddle 1.8.5 - 1.x, found version code {version}; port it "
            "to paddle's 2.x API (parl.Model, parl.Algorithm, parl.Agent)"
        )


def kill_process(regex_pattern: str) -> list[int]:
    """Kill (SIGKILL) this user's processes whose command line matches ``regex_pattern``.

    The calling process and its ancestors are never killed. PARL piped ``ps aux`` to
    ``kill -9``, which also hit other users' processes and the ``grep`` itself.

    Returns:
        The pids that were signalled.

    Raises:
        re.error: if ``regex_pattern`` is not a valid regular expression.
        OSError: where ``ps`` is not available (Windows).
    """
    pattern = re.compile(regex_pattern)
    listing = subprocess.run(
        ["ps", "-ww", "-o", "pid=,args=", "-u", str(os.geteuid())],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    spared = _ancestors()
    killed = []
    for line in listing.splitlines():
        pid_text, _, command = line.strip().partition(" ")
        pid = int(pid_text)
        if pid not in spared and pattern.search(command):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue  # it ended by itself meanwhile
            killed.append(pid)
    return killed


def _ancestors() -> set[int]:
    pids, pid = {os.getpid()}, os.getppid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        pid = _parent_of(pid)
    return pids


def _parent_of(pid: int) -> int:
    result = subprocess.run(
        ["ps", "-o", "ppid=", "-p", str(pid)], capture_output=True, text=True, timeout=30
    )
    text = result.stdout.strip()
    return int(text) if text.isdigit() else 0


def check_model_method(model: Any, method: str, algo: str) -> None:
    """Raise unless ``model`` implements ``method``, which algorithm ``algo`` calls.

    This is :func:`parl.core.paddle.algorithm.check_model_method` (it imports paddle on first call):
    ``forward`` counts only when the model's class overrides ``parl.Model``'s.

    Raises:
        parl.core.errors.ModelContractError: a ``TypeError`` (PARL raised ``AssertionError``).
    """
    from parl.core.paddle.algorithm import check_model_method as check

    check(model, method, algo)


def isnotebook() -> bool:
    """Whether the code runs in a Jupyter kernel (IPython's ``ZMQInteractiveShell``)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    return type(shell).__name__ == "ZMQInteractiveShell"
