"""Timeouts, addresses and paths of parl-remote, read from environment variables.

Every value has a default that suits a laptop and a LAN; tests and impatient users shorten them.

========================================  =======  ==============================================
Environment variable                      Default  Meaning
========================================  =======  ==============================================
``XPARL_HOME``                            ~/.parl_data  Data dir: pid files, actor logs.
``XPARL_HOST``                            127.0.0.1  Host every socket binds.
``XPARL_ADVERTISE_HOST``                  (host)   Host other processes are told to dial.
``XPARL_PORT_RANGE``                      (any)    ``LOW-HIGH`` range for all random ports.
``XPARL_HEARTBEAT_INTERVAL``              0.5      Seconds between heartbeats.
``XPARL_HEARTBEAT_TIMEOUT``               4.0      Seconds of silence before a peer is dead.
``XPARL_CONNECT_TIMEOUT``                 4.0      Seconds ``parl.connect`` waits for the master.
``XPARL_RESOURCE_TIMEOUT``                30.0     Seconds actor creation waits for a free CPU.
``XPARL_MEMORY_CHECK_INTERVAL``           0.2      Seconds between ``max_memory`` checks.
``XPARL_PYTHON``                          (this)   Interpreter command for cluster processes.
========================================  =======  ==============================================
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Timeouts", "data_home", "default_host", "parse_port_range", "python_command"]


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(
            f"environment variable {name}={raw!r} is not a number of seconds; "
            f"set it to a positive number such as {default}, or unset it"
        ) from None
    if value <= 0:
        raise ValueError(f"environment variable {name}={raw!r} must be > 0 seconds")
    return value


@dataclass(frozen=True)
class Timeouts:
    """Timeouts in seconds; defaults come from the ``XPARL_*`` environment variables.

    Attributes:
        heartbeat_interval: Seconds between heartbeats (client→master, worker→master).
        heartbeat_timeout: Seconds without a heartbeat after which a peer is declared dead.
        connect_timeout: Seconds ``parl.connect`` waits for the master's handshake.
        resource_timeout: Seconds actor creation waits for a vacant CPU/GPU.
        memory_check_interval: Seconds between a job's RSS checks against ``max_memory``.
    """

    heartbeat_interval: float = field(
        default_factory=lambda: _env_float("XPARL_HEARTBEAT_INTERVAL", 0.5)
    )
    heartbeat_timeout: float = field(
        default_factory=lambda: _env_float("XPARL_HEARTBEAT_TIMEOUT", 4.0)
    )
    connect_timeout: float = field(default_factory=lambda: _env_float("XPARL_CONNECT_TIMEOUT", 4.0))
    resource_timeout: float = field(
        default_factory=lambda: _env_float("XPARL_RESOURCE_TIMEOUT", 30.0)
    )
    memory_check_interval: float = field(
        default_factory=lambda: _env_float("XPARL_MEMORY_CHECK_INTERVAL", 0.2)
    )

    def as_env(self) -> dict[str, str]:
        """Environment variables that hand these timeouts to child processes."""
        return {
            "XPARL_HEARTBEAT_INTERVAL": repr(self.heartbeat_interval),
            "XPARL_HEARTBEAT_TIMEOUT": repr(self.heartbeat_timeout),
            "XPARL_CONNECT_TIMEOUT": repr(self.connect_timeout),
            "XPARL_RESOURCE_TIMEOUT": repr(self.resource_timeout),
            "XPARL_MEMORY_CHECK_INTERVAL": repr(self.memory_check_interval),
        }


def data_home() -> Path:
    """The data directory (``$XPARL_HOME`` or ``~/.parl_data``)."""
    return Path(os.environ.get("XPARL_HOME") or Path.home() / ".parl_data")


def default_host() -> str:
    """The host sockets bind by default (``$XPARL_HOST`` or 127.0.0.1)."""
    return os.environ.get("XPARL_HOST") or "127.0.0.1"


def parse_port_range(text: str | None) -> tuple[int, int] | None:
    """Parse ``"LOW-HIGH"`` into a port range; ``None``/empty means any free port."""
    if not text:
        return None
    try:
        low_text, high_text = text.split("-")
        low, high = int(low_text), int(high_text)
    except ValueError:
        raise ValueError(
            f"port range {text!r} is not of the form LOW-HIGH (for example 20000-30000)"
        ) from None
    if not 1 <= low <= high <= 65535:
        raise ValueError(f"port range {text!r} must satisfy 1 <= LOW <= HIGH <= 65535")
    return low, high


def python_command() -> list[str]:
    """The interpreter command used to spawn cluster processes (``$XPARL_PYTHON`` or this one)."""
    raw = os.environ.get("XPARL_PYTHON")
    return shlex.split(raw) if raw else [sys.executable]
