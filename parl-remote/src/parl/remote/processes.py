"""Liveness, process groups and descriptor limits of cluster processes.

Every job leads its own process group, so an actor's processes (children, grandchildren whose
parent already exited) share the job's group id and end with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

__all__ = ["end_own_group", "has_exited", "kill_group", "process_exists", "raise_fd_limit"]


def process_exists(pid: int) -> bool:
    """Whether a process with this pid exists (it may belong to another account)."""
    import psutil  # on first use: most cluster processes never ask

    return bool(psutil.pid_exists(pid))


def has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether ``proc`` exited, without reaping it: its pid (the group id) stays reserved."""
    if proc.returncode is not None:
        return True
    if not hasattr(os, "waitid"):
        return proc.poll() is not None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return proc.poll() is not None


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group ``pgid`` (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def end_own_group(code: int) -> None:
    """End this process and, if it leads its group (a job does), every process of the group."""
    sys.stderr.flush()
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(code)


def raise_fd_limit() -> int:
    """Raise this process's soft limit of open descriptors to its hard limit; return it.

    Every connection to a cluster process holds a descriptor, also while its handshake is
    pending, so the common soft limit of 1024 lets a stranger's idle connections exhaust them.
    """
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != soft:
        with contextlib.suppress(ValueError, OSError):  # refused (some macOS hard limits)
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
