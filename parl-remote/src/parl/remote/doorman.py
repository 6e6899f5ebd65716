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
because libzmq drops the others. Which pending connection a successful handshake belongs to the
monitor does not say, so the doorman asks the kernel instead: a peer that has sent more than a
ZMTP greeting is taking part in a handshake (a member, or a stranger libzmq will refuse as soon
as its credentials arrive), while an idle stranger has sent nothing. Beyond the cap, it hangs
up on idle connections that have had :data:`GRACE_S` to speak, oldest first; connections that
are talking are hung up on (oldest first) only when they alone would exceed a quarter of the
descriptor limit. So a member dialing in during a flood of idle connections is never the one
hung up on, and thousands of workers registering at once are not taken for a flood. Hanging up
is a ``shutdown`` of the descriptor, never a ``close``: libzmq sees the peer gone and closes the
descriptor itself, so its books stay right. (Should libzmq close a descriptor and reuse it for a
new connection between the monitor's report and the hang-up, that connection is hung up on
instead; a member's socket then simply dials again.)
"""

from __future__ import annotations

import contextlib
import resource
import socket
import struct
import time
from collections import OrderedDict

import zmq

__all__ = ["GRACE_S", "MAX_PENDING", "Doorman"]

MAX_PENDING = 256  # pending connections a socket keeps, at most a quarter of the fd limit
GRACE_S = 0.1  # a pending connection is never hung up on sooner
_LIMIT_EVERY_S = 1.0  # how often the descriptor limit is read again
_GREETING_BYTES = 64  # a ZMTP 3 greeting: a peer that sent more is past it, in its handshake
_TCP_INFO_BYTES = 136  # struct tcp_info up to tcpi_bytes_received (Linux 4.1+)
_BYTES_RECEIVED_AT = 128


class Doorman:
    """Tracks the pending connections of one bound socket and hangs up on the surplus.

    Args:
        handshake_s: The socket's handshake timeout: a connection open this long has proven
            itself.
    """

    def __init__(self, handshake_s: float) -> None:
        self.handshake_s = handshake_s
        # fd -> accepted at, oldest first: not yet seen past a greeting, and seen talking
        # (each connection is asked about once, so a burst of members costs O(connections)).
        self.pending: OrderedDict[int, float] = OrderedDict()
        self.talking: OrderedDict[int, float] = OrderedDict()
        self.hung_up = 0
        self._cap = MAX_PENDING
        self.descriptor_bound = MAX_PENDING
        self._cap_read = 0.0

    def saw(self, event: int, fd: int) -> None:
        """Note a monitor event: a connection accepted or gone."""
        if event == zmq.EVENT_ACCEPTED:
            self.talking.pop(fd, None)  # a descriptor libzmq closed and reused
            self.pending[fd] = time.monotonic()
            self.pending.move_to_end(fd)
        elif event == zmq.EVENT_DISCONNECTED:
            self.pending.pop(fd, None)
            self.talking.pop(fd, None)

    def enforce(self) -> None:
        """Forget connections that proved themselves; hang up on pending ones over the cap."""
        now = time.monotonic()
        for books in (self.pending, self.talking):
            while books and next(iter(books.values())) <= now - self.handshake_s:
                books.popitem(last=False)
        cap = self.cap(now)
        while len(self.pending) + len(self.talking) > cap and self.pending:
            fd, since = next(iter(self.pending.items()))
            if now - since < GRACE_S:
                break  # the rest are newer still
            del self.pending[fd]
            if _bytes_received(fd) > _GREETING_BYTES:
                self.talking[fd] = since
            else:
                _hang_up(fd)
                self.hung_up += 1
        while len(self.talking) + len(self.pending) > self.descriptor_bound and self.talking:
            _hang_up(self.talking.popitem(last=False)[0])
            self.hung_up += 1

    def cap(self, now: float) -> int:
        """:data:`MAX_PENDING`, or a quarter of this process's descriptor limit if lower."""
        if now - self._cap_read >= _LIMIT_EVERY_S:
            self._cap_read = now
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            self.descriptor_bound = 1 << 30 if soft == resource.RLIM_INFINITY else soft // 4
            self._cap = min(MAX_PENDING, self.descriptor_bound)
        return self._cap


def _bytes_received(fd: int) -> int:
    """How many bytes the peer on ``fd`` has sent (0 where the kernel cannot say)."""
    try:
        conn = socket.socket(fileno=fd)
    except OSError:
        return 0
    try:
        info = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)
    except (OSError, AttributeError):
        return 0
    finally:
        conn.detach()
    if len(info) < _TCP_INFO_BYTES:
        return 0
    return int(struct.unpack_from("=Q", info, _BYTES_RECEIVED_AT)[0])


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
