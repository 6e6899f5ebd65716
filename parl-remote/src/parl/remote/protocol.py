"""Wire constants and small zmq helpers shared by master, worker, job and client.

Control messages (registration, scheduling, heartbeats, status) are JSON objects in one frame,
so a malformed message cannot execute code in the master; only actor calls carry pickles, and
those go straight from the client to the job it owns, after both proved they hold the cluster
secret (:mod:`parl.remote.security`). Every socket bounds the size of what it receives: control
frames to :data:`CONTROL_MAX_BYTES`, actor payloads to ``Limits.max_message_bytes``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import struct
import sys
from typing import Any

from parl.remote.config import parse_port_range

import zmq

__all__ = [
    "CONTROL_MAX_BYTES",
    "PROTOCOL_VERSION",
    "BadMessage",
    "Watch",
    "bind_socket",
    "decode",
    "encode",
    "python_version",
    "remote_version",
]

PROTOCOL_VERSION = 4  # 3: numbered deltas, cancels; 4: the actor channel's head frames
CONTROL_MAX_BYTES = 256 * 2**10  # what a master or worker accepts in one frame
STATUS_MAX_BYTES = 64 * 2**20  # what a tool accepts as the answer to a status or log query
MAX_DEPTH = 32  # nesting a control frame may have (what xparl itself sends stays far below)
HANDSHAKE_TIMEOUT_S = 5.0  # for a peer of a bound socket to prove it holds the secret
DROPS_TO_REFUSAL = 3  # handshakes in a row a server hangs up on before a member calls it refusal
LISTEN_BACKLOG = 4096  # connections the kernel queues for a bound socket to accept
MAX_BURST = 1000  # messages a master or worker handles before it looks after its own duties

# Control-plane tags (first frame after the ROUTER identity).
REGISTER_WORKER = b"register_worker"
WORKER_HEARTBEAT = b"worker_heartbeat"
JOB_READY = b"job_ready"
JOB_EXITED = b"job_exited"
JOB_CLAIMED = b"job_claimed"
JOB_FAILED = b"job_failed"
KILL_JOB = b"kill_job"
HELLO = b"hello"
CLIENT_HEARTBEAT = b"client_heartbeat"
REQUEST_ACTOR = b"request_actor"
CANCEL_REQUEST = b"cancel_request"  # client -> master: it stopped waiting for a request
RELEASE_ACTOR = b"release_actor"
GOODBYE = b"goodbye"
ACTOR_DIED = b"actor_died"
STATUS = b"status"
READ_LOG = b"read_log"
INSPECT = b"inspect"  # a worker's host, jobs and recently ended actors (monitor, status)
JOB_ERROR = b"job_error"  # job -> worker: the actor raised (type, message, traceback)
ACK = b"ack"
ERROR = b"error"
SHUTDOWN = b"shutdown"

# Actor-plane operations (client → job) and reply statuses (job → client).
OP_HELLO = b"H"
OP_INIT = b"I"
OP_CALL = b"C"
OP_GET = b"G"
OP_SET = b"S"
OP_RELEASE = b"R"
OP_PING = b"P"
REPLY_OK = b"O"
REPLY_ERROR = b"E"
REPLY_DIED = b"D"


# The actor channel's framing. A request is one head frame, then the payload's other frames:
#   head = seq (8 bytes) + op (1) + name length (2, little-endian) + name + flags (1) [+ body]
# and a reply (after the job's ROUTER identity) likewise:
#   head = seq (8) + status (1) + flags (1) [+ body]
# where flag INLINE says the payload's first frame (a call's pickle, a JSON object) is the body,
# appended to the head because it is small. A trivial call is then one frame each way, as a
# bare ZeroMQ echo is; large and out-of-band frames (numpy arrays) still travel on their own.
INLINE_MAX_BYTES = 64 * 2**10
MAX_NAME_BYTES = 1024
_INLINE = 1
_SEQ = 8
_SNDMORE = int(zmq.SNDMORE)  # plain ints: pyzmq's enums and attribute sugar cost microseconds
_COPY_BELOW = 65536  # pyzmq copies small frames faster than it tracks them


class Request:
    """A parsed actor-channel request; ``payload`` frames are memoryviews of what arrived."""

    __slots__ = ("frames", "name", "op", "payload", "seq")

    def __init__(
        self, seq: bytes, op: bytes, name: str, payload: list[memoryview], frames: list[Any]
    ) -> None:
        self.seq, self.op, self.name, self.payload = seq, op, name, payload
        self.frames = frames  # the zmq frames after the head, as received (for their properties)


def _with_body(head: bytes, payload: list[Any]) -> list[Any]:
    if payload and isinstance(payload[0], bytes) and len(payload[0]) <= INLINE_MAX_BYTES:
        return [head + b"\x01" + payload[0], *payload[1:]]
    return [head + b"\x00", *payload]


def _payload(head: bytes, start: int, rest: list[Any]) -> list[memoryview]:
    frames = [getattr(frame, "buffer", frame) for frame in rest]
    if head[start - 1] & _INLINE:
        return [memoryview(head)[start:], *frames]
    return frames


def request_frames(
    seq: int, op: bytes, name: str = "", payload: list[Any] | None = None
) -> list[Any]:
    """The frames of one request from a client to its job."""
    raw = name.encode()
    if len(raw) > MAX_NAME_BYTES:
        raise ValueError(f"attribute name of {len(raw)} bytes; at most {MAX_NAME_BYTES}")
    head = seq.to_bytes(_SEQ, "little") + op + len(raw).to_bytes(2, "little") + raw
    return _with_body(head, payload or [])


def parse_request(head: bytes, rest: list[Any]) -> Request:
    """Read a request's head frame (bytes) and other frames; :class:`BadMessage` if malformed."""
    if len(head) < _SEQ + 4:
        raise BadMessage("a request head is at least 12 bytes")
    length = int.from_bytes(head[_SEQ + 1 : _SEQ + 3], "little")
    start = _SEQ + 3 + length + 1
    if length > MAX_NAME_BYTES or len(head) < start:
        raise BadMessage(f"the operation names an attribute of at most {MAX_NAME_BYTES} bytes")
    try:
        name = head[_SEQ + 3 : start - 1].decode()
    except UnicodeDecodeError:
        raise BadMessage("the attribute name is not UTF-8") from None
    return Request(head[:_SEQ], head[_SEQ : _SEQ + 1], name, _payload(head, start, rest), rest)


def reply_frames(seq: bytes, status: bytes, payload: list[Any]) -> list[Any]:
    """The frames of one reply from a job (without the ROUTER identity)."""
    return _with_body(seq + status, payload)


def parse_reply(head: bytes, rest: list[Any]) -> tuple[bytes, bytes, list[memoryview]]:
    """``(seq, status, payload)`` of a reply; :class:`BadMessage` if malformed."""
    if len(head) < _SEQ + 2:
        raise BadMessage("a reply head is at least 10 bytes")
    return head[:_SEQ], head[_SEQ : _SEQ + 1], _payload(head, _SEQ + 2, rest)


def recv_message(sock: zmq.Socket, max_frames: int, heads: int = 1) -> list[Any] | None:
    """Receive one multipart message: its first ``heads`` frames as bytes (copied: they are
    small), the others as zero-copy frames. None if it had more than ``max_frames`` (the surplus
    is read and dropped). Raises ``zmq.Again`` when nothing arrives within the socket's receive
    timeout."""
    # Received as zmq frames: a frame's ``more`` is far cheaper than asking the socket (RCVMORE).
    frame = sock.recv(copy=False)
    frames: list[Any] = [frame.bytes]
    overflow = False
    while frame.more:
        frame = sock.recv(copy=False)
        if len(frames) >= max_frames:
            overflow = True
        elif len(frames) < heads:
            frames.append(frame.bytes)
        else:
            frames.append(frame)
    return None if overflow else frames


def send_message(sock: zmq.Socket, frames: list[Any], flags: int = 0) -> None:
    """Send ``frames`` as one message: small ones copied (cheaper in pyzmq), large ones not."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        more = _SNDMORE if i < last else 0
        sock.send(frame, flags | more, copy=isinstance(frame, bytes) and len(frame) < _COPY_BELOW)


def remote_version() -> str:
    """The installed parl-remote version (the parl package version it ships with)."""
    from parl._version import __version__

    return __version__


def python_version() -> str:
    """``major.minor`` of this interpreter: pickles are exchanged only between equal ones."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def identity() -> dict[str, Any]:
    """Version and host facts sent in every handshake."""
    return {
        "version": remote_version(),
        "python": python_version(),
        "protocol": PROTOCOL_VERSION,
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "platform": platform.system(),
    }


def encode(payload: dict[str, Any]) -> bytes:
    """Encode a control payload."""
    return json.dumps(payload, separators=(",", ":")).encode()


class BadMessage(ValueError):
    """A message that is malformed: it is dropped and counted, never fatal."""


def decode(frame: bytes, limit: int = CONTROL_MAX_BYTES) -> dict[str, Any]:
    """Decode a control payload; raises BadMessage for anything but a small, shallow JSON
    object (no deeper than :data:`MAX_DEPTH`, so no handler or reply can recurse without end)."""
    if len(frame) > limit:
        raise BadMessage(f"control frame of {len(frame)} bytes exceeds {limit}")
    try:
        payload = json.loads(frame)
    except RecursionError:
        raise BadMessage(f"control frame nests deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadMessage(f"control frame is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise BadMessage(f"control payload must be a JSON object, got {type(payload).__name__}")
    if frame.count(b"[") + frame.count(b"{") > MAX_DEPTH and _too_deep(payload):
        raise BadMessage(f"control frame nests deeper than {MAX_DEPTH} levels")
    return payload


def _too_deep(payload: Any) -> bool:
    """Whether ``payload`` nests lists and objects deeper than :data:`MAX_DEPTH` (level by
    level, without recursion)."""
    level, depth = [payload], 1
    while level:
        if depth > MAX_DEPTH:
            return True
        deeper = []
        for value in level:
            for child in value.values() if isinstance(value, dict) else value:
                if isinstance(child, (dict, list)):
                    deeper.append(child)
        level, depth = deeper, depth + 1
    return False


def text(msg: dict[str, Any], key: str, default: str | None = None, max_len: int = 512) -> str:
    """The string field ``key`` of a control message (bounded length)."""
    value = msg.get(key, default)
    if not isinstance(value, str) or len(value) > max_len:
        raise BadMessage(f"field {key!r} must be a string of at most {max_len} characters")
    return value


def integer(msg: dict[str, Any], key: str, low: int, high: int, default: int | None = None) -> int:
    """The integer field ``key`` of a control message, within ``[low, high]``."""
    value = msg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadMessage(f"field {key!r} must be an integer in [{low}, {high}]")
    return value


def number(msg: dict[str, Any], key: str, low: float, high: float, default: float) -> float:
    """The numeric field ``key`` of a control message, within ``[low, high]``."""
    value = msg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise BadMessage(f"field {key!r} must be a number in [{low}, {high}]")
    return float(value)


def items(msg: dict[str, Any], key: str, kind: type, max_items: int = 4096) -> list[Any]:
    """The list field ``key`` (missing: empty) whose elements are all of type ``kind``."""
    value = msg.get(key, [])
    if (
        not isinstance(value, list)
        or len(value) > max_items
        or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value)
    ):
        raise BadMessage(f"field {key!r} must be a list of {kind.__name__} (at most {max_items})")
    return value


def recv_bounded(sock: zmq.Socket, max_frames: int, copy: bool = True) -> list[Any] | None:
    """Receive one multipart message of at most ``max_frames`` parts (None if it had more:
    the surplus is read and dropped so the socket stays in step). Call after a poll."""
    frames: list[Any] = [sock.recv(zmq.NOBLOCK, copy=copy)]
    overflow = False
    while sock.get(zmq.RCVMORE):
        frame = sock.recv(copy=copy)
        if len(frames) < max_frames:
            frames.append(frame)
        else:
            overflow = True
    return None if overflow else frames


def bound_inbound(sock: zmq.Socket, max_bytes: int) -> None:
    """Make libzmq drop a peer that sends a frame larger than ``max_bytes``, before reading it."""
    sock.setsockopt(zmq.MAXMSGSIZE, max_bytes)


HANDSHAKE_FAILED = (
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)


def dial(
    context: zmq.Context,
    address: str,
    security: Any,
    label: str,
    log: Any,
    max_bytes: int = CONTROL_MAX_BYTES,
) -> tuple[zmq.Socket, Watch]:
    """A DEALER to the master or a worker at ``address`` that proves this process holds the
    cluster secret, with a :class:`Watch` that tells when the other side refuses it."""
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    bound_inbound(sock, max_bytes)
    security.dial_control(sock)
    watch = Watch(sock, 0, label, log)
    sock.connect(f"tcp://{address}")
    return sock, watch


class NoAnswer(Exception):
    """Nothing came back in time; ``problem`` says why if the peer refused this process."""

    def __init__(self, problem: str | None) -> None:
        super().__init__(problem or "no answer")
        self.problem = problem


def await_answer(sock: zmq.Socket, watch: Watch, timeout: float) -> None:
    """Return once ``sock`` has something to read; raise :class:`NoAnswer` (at once when the
    peer refused this process's credentials, else after ``timeout`` seconds)."""
    import time

    deadline = time.monotonic() + timeout
    while not sock.poll(50):
        watch.drain()
        if watch.problem is not None:
            raise NoAnswer(watch.problem)
        if time.monotonic() > deadline:
            raise NoAnswer(None)


def ask(
    sock: zmq.Socket,
    watch: Watch,
    frames: list[bytes],
    timeout: float,
    limit: int = CONTROL_MAX_BYTES,
) -> tuple[bytes, dict[str, Any]]:
    """Send a control request; return the tag and payload of the answer.

    Raises:
        NoAnswer: nothing came back (``problem`` set when the peer refused this process).
        BadMessage: the answer is malformed.
    """
    sock.send_multipart(frames)
    await_answer(sock, watch, timeout)
    reply = recv_bounded(sock, 2)
    if not reply or len(reply) != 2:
        raise BadMessage("a malformed answer")
    return reply[0], decode(reply[1], limit)


def monitor_event(monitor: zmq.Socket) -> tuple[int, int] | None:
    """The next ``(event, value)`` of a socket monitor, or None. (pyzmq's own helper module
    imports asyncio, which a client process does not need.)"""
    try:
        head, _endpoint = monitor.recv_multipart(zmq.NOBLOCK)
    except zmq.Again:
        return None
    event, value = struct.unpack("=Hi", head[:6])
    return event, value


def handshake_problem(event: int, value: int) -> str:
    """Why a security handshake failed, in words a user can act on."""
    if event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL and (
        value == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
    ):
        return (
            "the two sides use different security: one has the cluster secret and the other "
            "runs with --insecure or has no secret"
        )
    return "the cluster secrets differ"


class Watch:
    """The monitor of a socket: counts failed security handshakes, hands back other events.

    On a bound socket a failure is a refused peer; on a connecting socket it is this process
    being refused. A failure is logged as ``label (why; N so far)``, at most once a second so a
    port scan cannot flood a log, and the latest reason stays in ``problem``. On a bound socket
    a peer that hung up during its handshake is counted apart (``hung_up``, not ``refused``)
    and not logged: which side notices a mismatch first is a race, and a member that gave up
    waiting (a master busy with a burst of registrations) and redials hangs up that way too.
    A peer whose credentials the ZAP handler denied but that closed before libzmq could tell
    it counts as a hang-up to the monitor too; :meth:`tally` moves those to the refusals.
    On a bound socket a :class:`~parl.remote.doorman.Doorman` also caps the connections still
    in their handshake.
    On a connecting socket a server that hangs up mid-handshake (how a CURVE server answers the
    wrong secret) counts as a refusal only :data:`DROPS_TO_REFUSAL` times in a row: once is a
    busy server's handshake timeout or a flooded one making room.
    """

    def __init__(
        self, sock: zmq.Socket, events: int, label: str, log: Any, bound: bool = False
    ) -> None:
        from parl.remote.doorman import Doorman

        self.loud = HANDSHAKE_FAILED
        self.wanted = events
        self.doorman = Doorman(HANDSHAKE_TIMEOUT_S) if bound else None
        self.dropped = 0  # handshakes in a row the server hung up on
        if bound:
            self.loud &= ~zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
            events |= zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED
        else:
            events |= zmq.EVENT_HANDSHAKE_SUCCEEDED
        self.socket = sock.get_monitor_socket(events | HANDSHAKE_FAILED)
        self.label = label
        self.log = log
        self.refused = 0
        self.hung_up = 0  # bound socket: peers that hung up mid-handshake
        self.auth_failed = 0  # bound socket: refusals the ZAP handler's answer made
        self.problem: str | None = None
        self._last_log = 0.0

    def drain(self) -> list[tuple[int, int]]:
        """Read every pending event; return the ``(event, value)`` pairs other than failures."""
        import time

        events: list[tuple[int, int]] = []
        while (pair := monitor_event(self.socket)) is not None:
            event, value = pair
            if self.doorman is not None:
                self.doorman.saw(event, value)
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.dropped = 0
            if not event & HANDSHAKE_FAILED:
                if event & self.wanted:
                    events.append((event, value))
                continue
            if self.doorman is not None and event == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
                self.hung_up += 1
                continue
            self.refused += 1
            self.auth_failed += event == zmq.EVENT_HANDSHAKE_FAILED_AUTH
            if not event & self.loud:
                continue
            if event == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
                self.dropped += 1
                if self.dropped < DROPS_TO_REFUSAL:
                    continue
            self.problem = handshake_problem(event, value)
            now = time.monotonic()
            if now - self._last_log >= 1.0:
                self._last_log = now
                self.log.warning("%s (%s; %d so far)", self.label, self.problem, self.refused)
        if self.doorman is not None:
            self.doorman.enforce()
        return events

    def tally(self, denied: int) -> tuple[int, int]:
        """Refused and hung-up peers of a bound socket whose ZAP handler has denied ``denied``
        credentials: a denial the monitor never reported as such belongs to a peer that
        closed before the answer reached it, which it reported as a hang-up instead."""
        unreported = max(0, min(denied - self.auth_failed, self.hung_up))
        return self.refused + unreported, self.hung_up - unreported

    def close(self, sock: zmq.Socket) -> None:
        # Stop the monitor before closing its socket: closing a live monitor's PAIR end can
        # wedge the context's I/O thread.
        with contextlib.suppress(zmq.ZMQError):
            sock.disable_monitor()
        self.socket.close(linger=0)


def bind_socket(sock: zmq.Socket, host: str, port_range: str | None = None, port: int = 0) -> int:
    """Bind ``sock`` on ``host``: on ``port`` if non-zero, else on a free port of the range.

    A peer that has not completed its security handshake within :data:`HANDSHAKE_TIMEOUT_S` is
    dropped (libzmq's default waits 30 s), so idle connections of strangers cannot pile up. The
    listen queue holds :data:`LISTEN_BACKLOG` connections (the kernel caps it at its somaxconn):
    with libzmq's 100, a stranger's flood filled it while the process had no descriptor to
    accept with, the kernel dropped members' connection attempts, and their retries backed off
    for longer than a connect timeout; queued, they are accepted in turn as the doorman hangs up.

    Returns:
        The bound port.
    """
    sock.handshake_ivl = int(HANDSHAKE_TIMEOUT_S * 1000)
    sock.setsockopt(zmq.BACKLOG, LISTEN_BACKLOG)
    if port:
        sock.bind(f"tcp://{host}:{port}")
        return port
    if port_range is None:
        port_range = os.getenv("XPARL_PORT_RANGE")
    bounds = parse_port_range(port_range)
    if bounds is None:
        return sock.bind_to_random_port(f"tcp://{host}")
    low, high = bounds
    return sock.bind_to_random_port(f"tcp://{host}", min_port=low, max_port=high + 1, max_tries=200)


def tcp(host: str, port: int) -> str:
    """A tcp endpoint string."""
    return f"tcp://{host}:{port}"
