"""Wire constants and small zmq helpers shared by master, worker, job and client.

Control messages (registration, scheduling, heartbeats, status) are JSON objects in one frame,
so a malformed message cannot execute code in the master; only actor calls carry pickles, and
those go straight from the client to the job it owns.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from typing import Any

from parl.remote.config import parse_port_range

import zmq

__all__ = [
    "PROTOCOL_VERSION",
    "bind_socket",
    "decode",
    "encode",
    "python_version",
    "remote_version",
]

PROTOCOL_VERSION = 1

# Control-plane tags (first frame after the ROUTER identity).
REGISTER_WORKER = b"register_worker"
WORKER_HEARTBEAT = b"worker_heartbeat"
JOB_READY = b"job_ready"
JOB_EXITED = b"job_exited"
KILL_JOB = b"kill_job"
HELLO = b"hello"
CLIENT_HEARTBEAT = b"client_heartbeat"
REQUEST_ACTOR = b"request_actor"
RELEASE_ACTOR = b"release_actor"
GOODBYE = b"goodbye"
ACTOR_DIED = b"actor_died"
STATUS = b"status"
READ_LOG = b"read_log"
ACK = b"ack"
ERROR = b"error"
SHUTDOWN = b"shutdown"

# Actor-plane operations (client → job) and reply statuses (job → client).
OP_INIT = b"I"
OP_CALL = b"C"
OP_GET = b"G"
OP_SET = b"S"
OP_RELEASE = b"R"
OP_PING = b"P"
REPLY_OK = b"O"
REPLY_ERROR = b"E"
REPLY_DIED = b"D"


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


def decode(frame: bytes) -> dict[str, Any]:
    """Decode a control payload; raises ValueError for anything but a JSON object."""
    payload = json.loads(frame)
    if not isinstance(payload, dict):
        raise ValueError(f"control payload must be a JSON object, got {type(payload).__name__}")
    return payload


def bind_socket(sock: zmq.Socket, host: str, port_range: str | None = None, port: int = 0) -> int:
    """Bind ``sock`` on ``host``: on ``port`` if non-zero, else on a free port of the range.

    Returns:
        The bound port.
    """
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
