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
``XPARL_CALL_TIMEOUT``                    (none)   Seconds a call may take before
                                                   ``CallTimeoutError`` (unset: no limit).
``XPARL_MAX_MESSAGE_MB``                  1024     Largest call argument or result (MiB).
``XPARL_LOG_MAX_MB``                      16       Size at which an actor's log rotates (MiB).
``XPARL_KEEP_LOGS``                       100      Logs of finished actors kept per worker.
``XPARL_HEARTBEATS_PER_S``                400      Worker heartbeats a master reads per second,
                                                   at most: beyond, workers beat less often.
``XPARL_PYTHON``                          (this)   Interpreter command for cluster processes.
``PARL_CLUSTER_SECRET``                   (none)   The cluster secret (``parl.remote.security``).
========================================  =======  ==============================================
"""

from __future__ import annotations

import errno
import os
import random
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DataDirError",
    "Limits",
    "Timeouts",
    "data_home",
    "default_host",
    "parse_port_range",
    "private_dir",
    "python_command",
    "writable_data_home",
]


def _env_number(name: str, default: float, unit: str) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(
            f"environment variable {name}={raw!r} is not a number of {unit}; "
            f"set it to a positive number such as {default:g}, or unset it"
        ) from None
    if not value > 0:
        raise ValueError(f"environment variable {name}={raw!r} must be > 0 {unit}")
    return value


def _env_float(name: str, default: float) -> float:
    return _env_number(name, default, "seconds")


def _env_optional_float(name: str) -> float | None:
    return _env_float(name, 1.0) if os.environ.get(name) else None


_MAX_REDIAL_S = 60.0


@dataclass(frozen=True)
class Timeouts:
    """Timeouts in seconds; defaults come from the ``XPARL_*`` environment variables.

    Attributes:
        heartbeat_interval: Seconds between heartbeats (client→master, worker→master).
        heartbeat_timeout: Seconds without a heartbeat after which a peer is declared dead.
        connect_timeout: Seconds ``parl.connect`` waits for the master's handshake; a worker's
            first wait for its registration's answer.
        register_timeout: Seconds a worker (``xparl connect``) keeps asking the master to
            register it, waiting ``connect_timeout`` and then twice as long each time (at most
            a minute), before it gives up.
        resource_timeout: Seconds actor creation waits for a vacant CPU/GPU.
        memory_check_interval: Seconds between a job's RSS checks against ``max_memory``.
        call_timeout: Seconds a call (or an actor's constructor) may run before the caller gets
            :class:`~parl.remote.CallTimeoutError`; None waits as long as the actor is alive.
    """

    heartbeat_interval: float = field(
        default_factory=lambda: _env_float("XPARL_HEARTBEAT_INTERVAL", 0.5)
    )
    heartbeat_timeout: float = field(
        default_factory=lambda: _env_float("XPARL_HEARTBEAT_TIMEOUT", 4.0)
    )
    connect_timeout: float = field(default_factory=lambda: _env_float("XPARL_CONNECT_TIMEOUT", 4.0))
    register_timeout: float = field(
        default_factory=lambda: _env_float("XPARL_REGISTER_TIMEOUT", 120.0)
    )
    resource_timeout: float = field(
        default_factory=lambda: _env_float("XPARL_RESOURCE_TIMEOUT", 30.0)
    )
    memory_check_interval: float = field(
        default_factory=lambda: _env_float("XPARL_MEMORY_CHECK_INTERVAL", 0.2)
    )
    call_timeout: float | None = field(
        default_factory=lambda: _env_optional_float("XPARL_CALL_TIMEOUT")
    )

    def register_waits(self) -> list[float]:
        """How long each registration attempt waits for the master's answer: connect_timeout,
        doubled each time up to a minute, until the waits add up to register_timeout."""
        waits: list[float] = []
        wait = self.connect_timeout
        while sum(waits) < self.register_timeout:
            waits.append(min(wait, _MAX_REDIAL_S, self.register_timeout - sum(waits)))
            wait *= 2
        return waits

    def redial_after(self, attempt: int) -> float:
        """Seconds before the ``attempt``-th (1, 2, ...) redial of a silent master: the
        heartbeat timeout doubled each time up to a minute, spread ±50 %, so the thousands of
        workers of a master that fell behind do not redial (and re-register) in step and keep
        it behind."""
        base = min(_MAX_REDIAL_S, self.heartbeat_timeout * 2 ** max(0, attempt - 1))
        return base * random.uniform(0.5, 1.5)

    def as_env(self) -> dict[str, str]:
        """Environment variables that hand these timeouts to child processes."""
        env = {
            "XPARL_HEARTBEAT_INTERVAL": repr(self.heartbeat_interval),
            "XPARL_HEARTBEAT_TIMEOUT": repr(self.heartbeat_timeout),
            "XPARL_CONNECT_TIMEOUT": repr(self.connect_timeout),
            "XPARL_REGISTER_TIMEOUT": repr(self.register_timeout),
            "XPARL_RESOURCE_TIMEOUT": repr(self.resource_timeout),
            "XPARL_MEMORY_CHECK_INTERVAL": repr(self.memory_check_interval),
        }
        if self.call_timeout is not None:
            env["XPARL_CALL_TIMEOUT"] = repr(self.call_timeout)
        return env


@dataclass(frozen=True)
class Limits:
    """Sizes that bound what a peer can make a cluster process hold.

    Attributes:
        max_message_bytes: Largest frame a job or client accepts (call arguments, results).
            A bigger one is refused before it is read: the sender gets a clear error.
        log_max_bytes: Size at which an actor's log is rotated (one older part is kept).
        keep_logs: Logs of finished actors each worker keeps; older ones are deleted.
        heartbeats_per_s: Worker heartbeats a master reads per second, at most: a cluster of
            more than ``heartbeats_per_s × heartbeat_interval`` workers is told to beat less
            often (see :mod:`parl.remote.pace`).
    """

    max_message_bytes: int = field(
        default_factory=lambda: int(_env_number("XPARL_MAX_MESSAGE_MB", 1024, "MiB") * 2**20)
    )
    log_max_bytes: int = field(
        default_factory=lambda: int(_env_number("XPARL_LOG_MAX_MB", 16, "MiB") * 2**20)
    )
    keep_logs: int = field(default_factory=lambda: int(_env_number("XPARL_KEEP_LOGS", 100, "logs")))
    heartbeats_per_s: float = field(
        default_factory=lambda: _env_number("XPARL_HEARTBEATS_PER_S", 400, "heartbeats a second")
    )


def data_home() -> Path:
    """The data directory (``$XPARL_HOME`` or ``~/.parl_data``)."""
    return Path(os.environ.get("XPARL_HOME") or Path.home() / ".parl_data")


class DataDirError(RuntimeError):
    """A folder xparl keeps its data in cannot be created or written; the message says which,
    why, and what to do."""


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) readable by this account only; return it.

    Raises:
        DataDirError: The folder cannot be made (a file is in the way, no permission, disk full).
    """
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)
    except OSError as exc:
        raise DataDirError(_unusable(path, exc)) from None
    return path


def writable_data_home() -> Path:
    """The data directory, created owner-only and proven writable by writing (and syncing)
    a small file, so a full disk or a read-only folder is one clear error at start rather
    than a process that dies later.

    Raises:
        DataDirError: The data directory cannot be used; the message says why and where.
    """
    home = private_dir(data_home())
    probe = home / f".write-check-{os.getpid()}"
    try:
        with open(probe, "wb") as handle:
            handle.write(b"\0" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise DataDirError(_unusable(home, exc)) from None
    finally:
        probe.unlink(missing_ok=True)
    return home


def _unusable(path: Path, exc: OSError) -> str:
    """One line: which folder xparl cannot use, why, and what to do."""
    home = data_home()
    source = "XPARL_HOME" if os.environ.get("XPARL_HOME") else "the default; set XPARL_HOME"
    where = f"xparl's data folder {home} ({source})"
    if path != home:
        where = f"{path} in {where}"
    reasons = {
        errno.ENOSPC: "the disk is full; free space there or point XPARL_HOME at another disk",
        errno.EDQUOT: "the disk quota is used up; free space or point XPARL_HOME elsewhere",
        errno.EEXIST: "a file is in the way; remove it or point XPARL_HOME at a folder",
        errno.ENOTDIR: "a file is in the way; remove it or point XPARL_HOME at a folder",
        errno.EACCES: "this account may not write there; point XPARL_HOME at a folder it owns",
        errno.EPERM: "this account may not write there; point XPARL_HOME at a folder it owns",
        errno.EROFS: "it is on a read-only file system; point XPARL_HOME at a writable folder",
    }
    reason = reasons.get(exc.errno or 0, f"{exc.strerror or exc}")
    return f"cannot write {where}: {reason}"


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
