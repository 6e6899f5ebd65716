"""Helpers for tests of code that runs on a cluster: bounded waits and process checks.

Families with remote actors (IMPALA, ES) and parl-remote's own suite wait on clusters and
processes the same way; a third party's remote family can too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import psutil

__all__ = ["processes_gone", "wait_for"]


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> object:
    """Poll ``predicate`` until it returns a truthy value, and return that value.

    Raises:
        AssertionError: ``timeout`` seconds passed first; the message names ``what``.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def processes_gone(pids: Iterable[int]) -> bool:
    """True when none of ``pids`` runs (zombies count as gone: a test does not reap them)."""
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True
