"""One message kills no process: deeply nested and wrong-typed frames of every message kind,
sent by a holder of the cluster secret to a real master, worker and job, are dropped and
counted (or answered with an error), and every process goes on serving."""

from __future__ import annotations

import json
import pickle
import threading
import time
from typing import Any

import parl
import parl.remote
from parl.remote import protocol as P
from parl.remote.client import Client
from parl.remote.cluster import start_worker, stop_process
from parl.remote.config import Timeouts
from parl.remote.security import Security

import cloudpickle
import psutil
import pytest
import zmq

from .conftest import raw_socket, wait_for

# ~2 KB of brackets, ~1,000 levels: json.loads recurses once per level.
DEEP = b"[" * 1000 + b"]" * 1000
DEEP_IN_OBJECT = b'{"job_id":' + b"[" * 1000 + b"]" * 1000 + b"}"
SHALLOW_BUT_TOO_DEEP = b'{"request_id":' + b"[" * 40 + b"]" * 40 + b"}"
# Frames that are never a valid control message, whatever the tag.
ALWAYS_BAD = [DEEP, DEEP_IN_OBJECT, SHALLOW_BUT_TOO_DEEP, b"[]", b"7", b'"text"', b"null", b"{"]
JUNK: list[Any] = [None, True, -1, 2**70, 1.5, "x" * 5000, [1, "a"], {"ready": [1, 2]}, []]
FIELDS = [
    "client_id",
    "worker_id",
    "token",
    "seq",
    "change",
    "request_id",
    "job_id",
    "jobs",
    "cpu_num",
    "gpus",
    "address",
    "host",
    "pid",
    "n_gpu",
    "timeout",
    "releases",
    "actors",
    "script",
    "hostname",
    "reason",
    "message",
    "lines",
    "log_dir",
    "bad_messages",
    "refused",
    "mechanism",
    "max_message_bytes",
    "class_name",
    "traceback",
    "type",
]
CONTROL_TAGS = sorted(
    value for name, value in vars(P).items() if name.isupper() and isinstance(value, bytes)
)
OPS = [P.OP_HELLO, P.OP_INIT, P.OP_CALL, P.OP_GET, P.OP_SET, P.OP_RELEASE, P.OP_PING]


@parl.remote_class
class Echo:
    def echo(self, value: object) -> object:
        return value


def _wrong_typed(valid: dict[str, Any]) -> list[bytes]:
    """Objects whose fields have the wrong type: all at once, and one at a time next to the
    valid identity fields (so the handlers past the identity check see them too)."""
    frames = []
    for junk in JUNK:
        frames.append(json.dumps({field: junk for field in FIELDS}).encode())
        frames.append(json.dumps({**{field: junk for field in FIELDS}, **valid}).encode())
    for field in FIELDS:
        if field not in valid:
            frames.append(json.dumps({**valid, field: JUNK[len(field) % len(JUNK)]}).encode())
    return frames


def _drain(sock: zmq.Socket) -> None:
    while sock.poll(0):
        sock.recv_multipart()


def _flood(address: str, security: Any, valid: dict[str, Any]) -> int:
    """Send every bad frame under every control tag; return how many can only be dropped."""
    sock = raw_socket(address, security)
    bad = 0
    for tag in CONTROL_TAGS:
        for body in ALWAYS_BAD:
            sock.send_multipart([tag, body])
            bad += 1
        for body in _wrong_typed(valid):
            sock.send_multipart([tag, body])
        sock.send_multipart([tag])  # a tag without a body
        sock.send_multipart([tag, b"{}", b"{}"])  # one frame too many
        bad += 2
        _drain(sock)
    sock.close(linger=2000)
    return bad


def _ask(sock: zmq.Socket, frames: list[bytes]) -> list[bytes]:
    sock.send_multipart(frames)
    assert sock.poll(10_000), f"no answer to {frames[:2]!r}"
    return sock.recv_multipart()


def _worker_bad_messages(cluster: Any, pid: int) -> int:
    """The malformed messages the worker with ``pid`` reported (the master's status)."""
    return sum(w["bad_messages"] for w in cluster.query()["workers"] if w["pid"] == pid)


def _job_pid(cluster: Any, job_id: str) -> int:
    """The pid of the job ``job_id`` (a child of one of the cluster's workers)."""
    for record in cluster.workers:
        for child in psutil.Process(record["pid"]).children():
            if job_id in child.cmdline():
                return int(child.pid)
    raise AssertionError(f"no process for job {job_id}")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_master_and_worker_drop_and_count_every_bad_frame(start_cluster) -> None:
    cluster = start_cluster(1)
    before = cluster.query()
    worker = before["workers"][0]
    # Identities the master knows, so the fuzz reaches the handlers behind the identity checks.
    member = raw_socket(cluster.address, cluster.security)
    client_id = "c" * 32
    assert _ask(member, [P.HELLO, P.encode({**P.identity(), "client_id": client_id})])[0] == P.ACK
    fake_worker = {"worker_id": "fuzz-worker", "token": "t" * 32}
    registration = {
        **P.identity(),
        **fake_worker,
        "seq": 1,  # the number of the worker's latest report (protocol 2)
        "change": 1,  # (protocol 3)
        "host": "127.0.0.1",
        "address": "127.0.0.1:9",
        "cpu_num": 0,
        "jobs": {"ready": [], "busy": []},
    }
    assert _ask(member, [P.REGISTER_WORKER, P.encode(registration)])[0] == P.ACK
    member.close()
    valid = {"client_id": client_id, **fake_worker}
    to_master = _flood(cluster.address, cluster.security, valid)
    to_worker = _flood(worker["address"], cluster.security, valid)
    wait_for(
        lambda: cluster.query()["bad_messages"] >= before["bad_messages"] + to_master,
        30,
        f"the master to count {to_master} malformed messages",
    )
    wait_for(
        lambda: _worker_bad_messages(cluster, worker["pid"]) >= worker["bad_messages"] + to_worker,
        30,
        f"the worker to count {to_worker} malformed messages",
    )
    assert _alive(cluster.master["pid"]) and _alive(worker["pid"])
    parl.remote.connect(cluster.address)
    assert Echo().echo("still served") == "still served"


class _JobSocket:
    """A holder of the cluster secret talking to one job, as its client would."""

    def __init__(self, cluster: Any, job: dict[str, Any]) -> None:
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.linger = 0
        cluster.security.dial_job(self.sock, job["job_id"], "plain")
        self.sock.connect(f"tcp://{job['address']}")
        self.seq = 0

    def ask(self, op: bytes, *frames: bytes, name: str = "") -> tuple[bytes, dict[str, Any]]:
        """Send one request; return the reply status and its JSON frame (empty if none)."""
        self.seq += 1
        return self.ask_raw(P.request_frames(self.seq, op, name, list(frames)))

    def ask_raw(self, frames: list[bytes]) -> tuple[bytes, dict[str, Any]]:
        """Send ``frames`` as they are; return the status and JSON of the reply to their seq."""
        self.sock.send_multipart(frames)
        while True:
            assert self.sock.poll(10_000), f"no answer to {frames[0][:16]!r}"
            head, *rest = self.sock.recv_multipart()
            seq, status, payload = P.parse_reply(head, rest)
            if seq == frames[0][:8]:
                break
        body = bytes(payload[0]) if payload else b""
        return status, P.decode(body, 1 << 20) if body[:1] == b"{" else {}

    def close(self) -> None:
        self.sock.close()


def _init_frames(args_frame: bytes) -> list[bytes]:
    class Box:
        def __init__(self, value: int = 0) -> None:
            self.value = value

        def get(self) -> int:
            return self.value

    spec = {"class_name": "Box", "client_id": "f" * 32, "gpus": [], "max_message_bytes": 1 << 20}
    return [P.encode(spec), b"[]", b"", cloudpickle.dumps(Box), args_frame]


NOT_PAIRS = [(1, 2, 3), 5, ((), []), (7, {}), ((), {1: 2}), None]


def _malformed(job: _JobSocket, count: int, op: bytes, *frames: bytes) -> int:
    status, body = job.ask(op, *frames)
    assert status == P.REPLY_ERROR and body["kind"] == "malformed", (op, body)
    assert body["bad_messages"] == count + 1, body  # counted, one by one
    return count + 1


@pytest.mark.parametrize("not_a_pair", NOT_PAIRS, ids=repr)
def test_an_init_whose_arguments_are_not_a_pair_gets_an_error(start_cluster, not_a_pair) -> None:
    cluster = start_cluster(1)
    job = cluster.query()["workers"][0]["idle"][0]
    pid = _job_pid(cluster, job["job_id"])
    talk = _JobSocket(cluster, job)
    status, body = talk.ask(P.OP_INIT, *_init_frames(pickle.dumps(not_a_pair)))
    assert status == P.REPLY_ERROR and body["kind"] == "deserialize", body
    assert "(args, kwargs) pair" in body["message"]
    assert talk.ask(P.OP_PING) == (P.REPLY_OK, {}) and _alive(pid)
    talk.close()


def test_a_job_drops_and_counts_every_bad_frame(start_cluster) -> None:
    cluster = start_cluster(1)
    job = cluster.query()["workers"][0]["idle"][0]
    pid = _job_pid(cluster, job["job_id"])
    talk = _JobSocket(cluster, job)
    count = 0
    for op in OPS:  # before INIT: the free job
        for body in ALWAYS_BAD:
            count = _malformed(talk, count, op, body)
    count = _malformed(talk, count, P.OP_INIT, DEEP, b"[]", b"", b"x", b"y")  # a deep spec
    spec, _, _, *rest = _init_frames(b"")
    for listing in (DEEP, b'[["a", 1], 7]', b'{"a": 1}'):  # the shipped files' list
        count = _malformed(talk, count, P.OP_INIT, spec, listing, b"", *rest)
    count = _malformed(talk, count, P.OP_INIT, *_init_frames(b"")[:3])  # too few frames
    count = _malformed(talk, count, P.OP_HELLO, b"short")
    status, _ = talk.ask(P.OP_INIT, *_init_frames(pickle.dumps(((41,), {}))))
    assert status == P.REPLY_OK
    for op in (P.OP_CALL, P.OP_GET, P.OP_SET):  # the owner's operations
        count = _malformed(talk, count, op, b"x")  # no name
        for name in (b"\xff\xfe", b"n" * 2000):  # not UTF-8; too long
            head = b"\1" * 8 + op + len(name).to_bytes(2, "little") + name + b"\0"
            status, body = talk.ask_raw([head, b"x"])
            assert status == P.REPLY_ERROR and body["bad_messages"] == count + 1, body
            count += 1
    for head in (b"", b"\1" * 11, b"\1" * 8 + P.OP_CALL + b"\xff\xff"):  # short, cut heads
        talk.sock.send(head)
    count = _malformed(talk, count + 3, P.OP_GET)  # counted after the three cut heads
    for frame in [DEEP, b"not a pickle", *(pickle.dumps(p) for p in NOT_PAIRS)]:
        status, body = talk.ask(P.OP_CALL, frame, name="get")
        assert status == P.REPLY_ERROR and body["kind"] == "deserialize", body
    status, body = talk.ask(P.OP_CALL, pickle.dumps(((), {})), name="get")
    assert status == P.REPLY_OK and _alive(pid)
    talk.close()


class _FakeMaster:
    """A master played by the test (it holds the secret): it admits a real worker and a client,
    then sends them malformed messages of every kind."""

    def __init__(self, security: Security) -> None:
        self.security = security
        self.context = zmq.Context()
        self.keeper = security.start_gatekeeper(self.context)
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.linger = 0
        security.serve_control(self.socket)
        self.address = f"127.0.0.1:{self.socket.bind_to_random_port('tcp://127.0.0.1')}"
        self.peers: dict[bytes, bytes] = {}  # tag of the first message -> identity
        self.bad_messages_reported = 0
        self.heartbeats = 0

    def serve(self, seconds: float, peers: int = 0) -> None:
        """Answer registrations, hellos and heartbeats for ``seconds`` (or until ``peers``
        have said hello or registered)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and (not peers or len(self.peers) < peers):
            if not self.socket.poll(int(left * 1000) + 1):
                continue
            identity, tag, body = self.socket.recv_multipart()
            payload = P.decode(body, P.STATUS_MAX_BYTES)
            if tag in (P.REGISTER_WORKER, P.HELLO):
                self.peers[tag] = identity
                ack = {"registered": True, "master": self.address, "mode": "auth"}
                self.socket.send_multipart([identity, P.ACK, P.encode(ack)])
            elif tag in (P.WORKER_HEARTBEAT, P.CLIENT_HEARTBEAT):
                self.heartbeats += 1
                reported = payload.get("bad_messages", self.bad_messages_reported)
                self.bad_messages_reported = max(self.bad_messages_reported, reported)
                self.socket.send_multipart([identity, P.ACK, b"{}"])

    def flood(self, identity: bytes) -> int:
        """Every bad frame under every tag (but a well-formed SHUTDOWN); the count of those
        that can only be dropped."""
        bad = 0
        for tag in CONTROL_TAGS:
            bodies = ALWAYS_BAD if tag == P.SHUTDOWN else ALWAYS_BAD + _wrong_typed({})
            for body in bodies:
                self.socket.send_multipart([identity, tag, body])
            self.socket.send_multipart([identity, tag])
            self.socket.send_multipart([identity, tag, b"{}", b"{}"])
            bad += len(ALWAYS_BAD) + 2
            self.serve(0.01)
        return bad

    def close(self) -> None:
        self.socket.close()
        self.keeper.stop()
        self.context.term()


def test_a_worker_and_a_client_drop_bad_frames_from_their_master(tmp_path) -> None:
    security = Security("f" * 40)
    master = _FakeMaster(security)
    registering = threading.Thread(target=master.serve, args=(20, 2), daemon=True)
    registering.start()
    record = start_worker(master.address, 1, tmp_path, security=security, ready_timeout=15)
    client = None
    try:
        client = Client(master.address, None, Timeouts(), security)  # answered by the thread
        registering.join()
        bad = master.flood(master.peers[P.REGISTER_WORKER])
        wait = time.monotonic() + 20
        while master.bad_messages_reported < bad and time.monotonic() < wait:
            master.serve(0.2)
        assert master.bad_messages_reported >= bad  # counted by the worker, which still beats
        assert _alive(record["pid"])
        master.flood(master.peers[P.HELLO])
        beats = master.heartbeats
        master.serve(1.0)
        assert client._thread.is_alive() and master.heartbeats > beats  # the client beats on
    finally:
        if client is not None:
            client.close()
        stop_process(record)
        master.close()
    assert not _alive(record["pid"])
