"""A bound socket's cap on connections that have not proven themselves yet.

Every TCP connection holds a descriptor from the moment libzmq accepts it, also while its
security handshake is pending, and libzmq has no limit of its own on such connections. A
stranger that keeps opening idle ones would take every descriptor of a master, worker or job:
the process could then neither accept a member nor open a file. The handshake timeout
(:data:`parl.remote.protocol.HANDSHAKE_TIMEOUT_S`) bounds how long each may stay; the
:class:`Doorman` bounds how many may be pending at once, so the process always keeps most of its
descriptors for itself and its members.

It learns of connections from the socket's monitor (accepted, disconnected, both carrying the
descriptor). A connection still open once the handshake timeout has passed has proven itself,
because libzmq drops the others. Beyond the cap, the doorman hangs up on the oldest pending
connections that have had :data:`GRACE_S` to prove themselves (a member's handshake takes
milliseconds), keeping the newest, so a member dialing in during a flood is among the last to
go. Hanging up is a ``shutdown`` of the descriptor, never a ``close``: libzmq sees the peer gone
and closes the descriptor itself, so its books stay right. (Should libzmq close a descriptor and
reuse it for a new connection between the monitor's report and the hang-up, that connection is
hung up on instead; a member's socket then simply dials again.)
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections import OrderedDict

import zmq

__all__ = ["GRACE_S", "MAX_PENDING", "Doorman"]

MAX_PENDING = 256  # pending connections a socket keeps, at most a quarter of the fd limit
GRACE_S = 0.1  # a pending connection is never hung up on sooner
_LIMIT_EVERY_S = 1.0  # how often the descriptor limit is read again


class Doorman:
    """Tracks the pending connections of one bound socket and hangs up on the surplus.

    Args:
        handshake_s: The socket's handshake timeout: a connection open this long has proven
            itself.
    """

    def __init__(self, handshake_s: float) -> None:
        self.handshake_s = handshake_s
        self.pending: OrderedDict[int, float] = OrderedDict()  # fd -> accepted at, oldest first
        self.hung_up = 0
        self._cap = MAX_PENDING
        self._cap_read = 0.0

    def saw(self, event: int, fd: int) -> None:
        """Note a monitor event: a connection accepted or gone."""
        if event == zmq.EVENT_ACCEPTED:
            self.pending[fd] = time.monotonic()
            self.pending.move_to_end(fd)
        elif event == zmq.EVENT_DISCONNECTED:
            self.pending.pop(fd, None)
        elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED and self.pending:
            # The event does not say which connection proved itself; a handshake takes
            # milliseconds, so it is most likely the newest. Without this, thousands of
            # workers registering at once would count as pending and be hung up on.
            self.pending.popitem(last=True)

    def enforce(self) -> None:
        """Forget connections that proved themselves; hang up on pending ones over the cap."""
        now = time.monotonic()
        while self.pending and next(iter(self.pending.values())) <= now - self.handshake_s:
            self.pending.popitem(last=False)
        surplus = len(self.pending) - self.cap(now)
        while surplus > 0:
            fd, since = next(iter(self.pending.items()))
            if now - since < GRACE_S:
                return  # the rest are newer still
            del self.pending[fd]
            _hang_up(fd)
            self.hung_up += 1
            surplus -= 1

    def cap(self, now: float) -> int:
        """:data:`MAX_PENDING`, or a quarter of this process's descriptor limit if lower."""
        if now - self._cap_read >= _LIMIT_EVERY_S:
            import resource

            self._cap_read = now
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            self._cap = (
                MAX_PENDING if soft == resource.RLIM_INFINITY else min(MAX_PENDING, soft // 4)
            )
        return self._cap


def _hang_up(fd: int) -> None:
    """Shut down the connection on ``fd`` without closing the descriptor libzmq owns."""
    try:
        conn = socket.socket(fileno=fd)
    except OSError:
        return  # closed meanwhile, or not a socket any more
    try:
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
    finally:
        conn.detach()
