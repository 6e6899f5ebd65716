"""The ZAP handler of a cluster process: pyzmq's authenticator thread with constant-time checks.

Kept apart from :mod:`parl.remote.security` because pyzmq's authenticator imports asyncio, which
only processes that accept connections (master, worker, job) need.
"""

from __future__ import annotations

import hmac
import logging

import zmq
from zmq.auth.thread import ThreadAuthenticator

__all__ = ["Gatekeeper"]


class Gatekeeper(ThreadAuthenticator):
    """Admit PLAIN peers only with the exact password, compared in constant time; count the
    credentials it denies (``denied``), which the socket's monitor may report as a hang-up
    when the peer closes before the answer reaches it."""

    def __init__(self, context: zmq.Context) -> None:
        super().__init__(context, log=logging.getLogger("parl.remote.zap"))
        self.denied = 0

    def judge(self, admitted: bool) -> bool:
        """Count a denial; return ``admitted``."""
        self.denied += not admitted
        return admitted

    def _authenticate_plain(self, domain: str, username: str, password: str) -> tuple[bool, bytes]:
        expected = self.passwords.get(domain, {}).get(username)
        right = expected is not None and hmac.compare_digest(expected.encode(), password.encode())
        return (True, b"OK") if self.judge(right) else (False, b"wrong credentials")
