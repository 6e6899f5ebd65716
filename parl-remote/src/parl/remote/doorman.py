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
as its credentials arrive); a peer that has had this side's signature (or whole greeting) for
:data:`PATIENT_GRACE_S` without answering with its own is idle (:data:`GRACE_S` once pending
connections hold half the descriptors the doorman allows them); one still waiting for this side
(an I/O thread busy with thousands of members' handshakes) is neither, and is asked again later.
Beyond the cap, it hangs up on idle connections, oldest first; connections that
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

__all__ = ["GRACE_S", "MAX_PENDING", "PATIENT_GRACE_S", "Doorman"]

MAX_PENDING = 256  # pending connections a socket keeps, at most a quarter of the fd limit
GRACE_S = 0.1  # a pending connection is never hung up on sooner while descriptors are scarce
PATIENT_GRACE_S = 3.0  # otherwise (a slow link, a peer busy with thousands of handshakes)
_LIMIT_EVERY_S = 1.0  # how often the descriptor limit is read again
_SIGNATURE_BYTES = 10  # ZMTP 3: each side sends this much at once, the rest of its greeting
_GREETING_BYTES = 64  # once it has the other's signature; a peer that sent more is handshaking
_TCP_INFO_BYTES = 136  # struct tcp_info up to tcpi_bytes_received (Linux 4.2+)
_LAST_DATA_SENT_AT = 44  # tcpi_last_data_sent (ms)
_BYTES_ACKED_AT = 120  # tcpi_bytes_acked, then tcpi_bytes_received


class Doorman:
    """Tracks the pending connections of one bound socket and hangs up on the surplus.

    Args:
        handshake_s: The socket's handshake timeout: a connection open this long has proven
            itself.
    """

    def __init__(self, handshake_s: float) -> None:
        self.handshake_s = handshake_s
        # fd -> accepted at, oldest first: not asked about yet; asked while this side still
        # owed the peer its next step; seen talking. A connection leaves ``pending`` when first
        # asked about, so a burst of members costs O(connections), not O(n) per drain.
        self.pending: OrderedDict[int, float] = OrderedDict()
        self.waiting: OrderedDict[int, float] = OrderedDict()
        self.talking: OrderedDict[int, float] = OrderedDict()
        self.hung_up = 0
        self._cap = MAX_PENDING
        self.descriptor_bound = MAX_PENDING
        self._cap_read = 0.0
        self._asked_waiting = 0.0

    def saw(self, event: int, fd: int) -> None:
        """Note a monitor event: a connection accepted or gone."""
        if event == zmq.EVENT_ACCEPTED:
            self._forget(fd)  # a descriptor libzmq closed and reused
            self.pending[fd] = time.monotonic()
        elif event == zmq.EVENT_DISCONNECTED:
            self._forget(fd)

    def enforce(self) -> None:
        """Forget connections that proved themselves; hang up on pending ones over the cap."""
        now = time.monotonic()
        for books in (self.pending, self.waiting, self.talking):
            while books and next(iter(books.values())) <= now - self.handshake_s:
                books.popitem(last=False)
        cap = self.cap(now)
        if self._held() > cap:
            grace = GRACE_S if self._held() > self.descriptor_bound // 2 else PATIENT_GRACE_S
            if now - self._asked_waiting >= GRACE_S:  # those this side was behind with
                self._asked_waiting = now
                self._ask(self.waiting, now, cap, grace)
            self._ask(self.pending, now, cap, grace)
        while len(self.talking) > self.descriptor_bound:  # they alone: idle ones went first
            _hang_up(self.talking.popitem(last=False)[0])
            self.hung_up += 1

    def _ask(self, books: OrderedDict[int, float], now: float, cap: int, grace: float) -> None:
        """Oldest first, while over the cap: a peer that owes the next handshake step is idle
        and hung up on, one that sent more than a greeting is talking; one still waiting for
        this side (a busy I/O thread) waits, asked again later: it is not the peer's fault."""
        for fd, since in list(books.items()):
            if self._held() <= cap or now - since < grace:
                return  # the rest are newer still
            exchanged = _exchanged(fd)
            if exchanged is not None and exchanged[0] > _GREETING_BYTES:
                del books[fd]
                self.talking[fd] = since
            elif exchanged is None or _owes_us(*exchanged, grace):
                del books[fd]
                _hang_up(fd)  # (where the kernel cannot say, silence is taken for idleness)
                self.hung_up += 1
            elif books is not self.waiting:  # a waiting one keeps its place: oldest first
                del books[fd]
                self.waiting[fd] = since

    def _held(self) -> int:
        return len(self.pending) + len(self.waiting) + len(self.talking)

    def _forget(self, fd: int) -> None:
        for books in (self.pending, self.waiting, self.talking):
            books.pop(fd, None)

    def cap(self, now: float) -> int:
        """:data:`MAX_PENDING`, or a quarter of this process's descriptor limit if lower."""
        if now - self._cap_read >= _LIMIT_EVERY_S:
            self._cap_read = now
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            self.descriptor_bound = 1 << 30 if soft == resource.RLIM_INFINITY else soft // 4
            self._cap = min(MAX_PENDING, self.descriptor_bound)
        return self._cap


def _exchanged(fd: int) -> tuple[int, int, float] | None:
    """Bytes the peer on ``fd`` has sent, bytes of ours it has acknowledged, and seconds since
    this side last sent it anything; None where the kernel cannot say."""
    try:
        conn = socket.socket(fileno=fd)
    except OSError:
        return None
    try:
        info = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)
    except (OSError, AttributeError):
        return None
    finally:
        conn.detach()
    if len(info) < _TCP_INFO_BYTES:
        return None
    (last_sent_ms,) = struct.unpack_from("=I", info, _LAST_DATA_SENT_AT)
    acked, received = struct.unpack_from("=QQ", info, _BYTES_ACKED_AT)
    return int(received), int(acked), last_sent_ms / 1000


def _owes_us(received: int, acked: int, since_sent: float, grace: float) -> bool:
    """True if the peer has had this side's part of the greeting (the signature, or the whole
    greeting once it sent its own signature) for ``grace`` seconds without answering."""
    owed = _SIGNATURE_BYTES if received < _SIGNATURE_BYTES else _GREETING_BYTES
    return acked >= owed and since_sent >= grace


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
