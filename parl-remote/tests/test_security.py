"""Trust on real clusters: strangers without the secret run nothing, members cannot take what
is not theirs, encryption hides payloads, fuzzed frames are dropped and counted, files are
owner-only."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import random
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import parl
import parl.remote
from parl.remote import protocol as P
from parl.remote.client import ActorChannel, Client, _JobUnreachable
from parl.remote.cluster import LocalCluster, find_security, query, stop_process
from parl.remote.config import Timeouts
from parl.remote.exceptions import AuthenticationError
from parl.remote.security import SECRET_ENV, Mode, Security, read_secret_file

import cloudpickle
import numpy as np
import psutil
import pytest
import zmq
from zmq.auth.thread import ThreadAuthenticator

from .conftest import free_port, gone, init_frames, raw_socket, wait_for

MARKER = b"PLAINTEXT-MARKER-7f3a"


class Bomb:
    """A pickle that writes a file when it is loaded."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (self.path.write_text, ("an impostor's pickle was loaded",))


@parl.remote_class
class Echo:
    def echo(self, value: object) -> object:
        return value


def _no_answer(sock: zmq.Socket, frames: list[bytes], wait_ms: int = 300) -> bool:
    sock.send_multipart(frames)
    answered = bool(sock.poll(wait_ms))
    sock.close()
    return not answered


def _xparl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "parl.remote.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env if env is not None else dict(os.environ),
    )


STRANGER_CLIENT = """
import sys, parl

class Pwned:
    def __init__(self, path):
        open(path, "w").write("a stranger ran code here")

try:
    parl.connect(sys.argv[1], connect_timeout=3)
    parl.remote_class(Pwned)(sys.argv[2])
    print("CONNECTED")
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_strangers_without_the_secret_run_nothing(start_cluster, scripts, tmp_path) -> None:
    cluster = start_cluster(1)
    idle = cluster.query()["workers"][0]["idle"][0]
    marker = tmp_path / "pwned"
    elsewhere = {**os.environ, "XPARL_HOME": str(tmp_path / "other-home")}
    # A client on "another machine" (no record of the cluster), one with a wrong secret, and
    # workers without the secret or with a wrong one: all at once, they take a while to start.
    wrong_env = {**elsewhere, SECRET_ENV: "w" * 64}
    clients = [
        scripts(STRANGER_CLIENT, cluster.address, str(marker), env=e)
        for e in (elsewhere, wrong_env)
    ]
    join = ["-m", "parl.remote.cli", "connect", "--address", cluster.address, "--cpu_num", "4"]
    workers = [
        subprocess.Popen(
            [sys.executable, *join, *extra], env=env, stderr=subprocess.PIPE, text=True
        )
        for extra, env in ((["--insecure"], elsewhere), ([], wrong_env))
    ]
    # INIT with a constructor straight to a free job: no secret, then a wrong job password.
    assert _no_answer(raw_socket(idle["address"], None), init_frames(marker))
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    Security("w" * 64).dial_job(sock, idle["job_id"], "plain")
    sock.connect(f"tcp://{idle['address']}")
    assert _no_answer(sock, init_frames(marker))
    for client in clients:
        line = client.finish()
        assert line.startswith("AuthenticationError") and SECRET_ENV in line, line
    for worker in workers:
        _, err = worker.communicate(timeout=60)
        assert worker.returncode != 0 and "refused" in err, err
    assert not marker.exists()
    status = cluster.query()
    assert status["workers"][0]["idle"][0] == idle  # the job is still free
    assert status["cpus_total"] == 1 and status["refused_connections"] >= 2
    parl.remote.connect(cluster.address)
    actor = Echo()
    assert actor.echo(3) == 3 and actor._xparl_channel.job_id == idle["job_id"]
    # The control: the same frames from a holder of the secret do run the constructor.
    del actor
    job = wait_for(lambda: cluster.query()["workers"][0]["idle"], 20, "a new warm job")[0]
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    cluster.security.dial_job(sock, job["job_id"], "plain")
    sock.connect(f"tcp://{job['address']}")
    sock.send_multipart(init_frames(marker))
    assert sock.poll(10_000)
    head, *rest = sock.recv_multipart()
    assert P.parse_reply(head, rest)[1] == P.REPLY_OK
    sock.close()
    assert marker.read_text() == "a stranger ran code here"


def test_the_control_plane_is_refused_to_strangers_and_other_members(start_cluster) -> None:
    cluster = start_cluster(1)
    client = parl.remote.connect(cluster.address)
    actor = Echo()
    job_id = actor._xparl_channel.job_id
    worker = cluster.query()["workers"][0]
    requests = [
        [P.STATUS, b"{}"],
        [P.SHUTDOWN, b"{}"],
        [P.RELEASE_ACTOR, P.encode({"client_id": client.client_id, "job_id": job_id})],
        [P.REGISTER_WORKER, P.encode({"worker_id": worker["worker_id"], "cpu_num": 64})],
    ]
    for frames in requests:  # strangers: not even an answer
        assert _no_answer(raw_socket(cluster.address, None), frames)
    member = raw_socket(cluster.address, cluster.security)

    def ask(tag: bytes, payload: dict) -> dict:
        member.send_multipart([tag, P.encode(payload)])
        assert member.poll(5000), tag
        reply_tag, body = member.recv_multipart()
        return {"tag": reply_tag, **P.decode(body)}

    other = "1" * 32
    assert ask(P.HELLO, {**P.identity(), "client_id": other})["tag"] == P.ACK
    assert ask(P.RELEASE_ACTOR, {"client_id": other, "job_id": job_id})["kind"] == "not_owner"
    forged = ask(P.RELEASE_ACTOR, {"client_id": client.client_id[:8], "job_id": job_id})
    assert forged["kind"] == "unknown_client"  # status shows 8 characters: not enough
    takeover = {
        **P.identity(),
        "worker_id": worker["worker_id"],
        "token": "0" * 32,
        "seq": 1,
        "host": "127.0.0.1",
        "address": "127.0.0.1:1",
        "cpu_num": 64,
        "jobs": {},
    }
    assert ask(P.REGISTER_WORKER, takeover)["kind"] == "refused"
    assert ask(P.SHUTDOWN, {})["kind"] == "bad_message"
    member.close()
    assert actor.echo("still mine") == "still mine"
    status = cluster.query()
    assert [(w["worker_id"], w["pid"]) for w in status["workers"]] == [
        (worker["worker_id"], worker["pid"])
    ]
    assert status["cpus_total"] == 1 and status["refused_requests"] >= 2
    # Each stranger is refused at the handshake; one that the test closes before the master's
    # monitor reports the failed handshake counts as hung up instead (a race on a busy machine).
    strangers = status["refused_connections"] + status["handshakes_hung_up"]
    assert strangers >= len(requests), status
    del actor
    assert Echo().echo(1) == 1


class _Relay:
    """A TCP relay on loopback that records every byte it forwards."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.target = ""
        self.seen = bytearray()
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        host, port = self.target.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        self.sockets += [conn, upstream]
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(1 << 16):
                self.seen += data
                sink.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


@pytest.mark.parametrize("mode", [Mode.AUTH, Mode.ENCRYPT])
def test_encryption_hides_payloads_on_the_wire(start_cluster, mode: Mode) -> None:
    cluster = start_cluster(1, mode=mode)
    client = parl.remote.connect(cluster.address)
    relay = _Relay()
    request = client.request

    def through_relay(tag: bytes, payload: dict, timeout: float) -> dict:
        reply = request(tag, payload, timeout)
        if tag == P.REQUEST_ACTOR:
            relay.target, reply = reply["address"], {**reply, "address": relay.address}
        return reply

    client.request = through_relay  # type: ignore[method-assign]
    try:
        actor = Echo()
        assert actor.echo(MARKER * 8) == MARKER * 8
        assert len(relay.seen) > 8 * len(MARKER)
        assert (MARKER in relay.seen) is (mode is Mode.AUTH)  # plain on loopback unless asked
    finally:
        relay.close()


class _AnyPassword(ThreadAuthenticator):
    def _authenticate_plain(self, domain: str, username: str, password: str) -> tuple:
        return True, b"OK"


def test_a_fake_job_gets_nothing_from_a_client(connected, tmp_path) -> None:
    """A process that took a job's port answers HELLO without the secret: the client sends it
    nothing of the user's and unpickles nothing it sent."""
    client = parl.remote.get_client()
    context = zmq.Context()
    gate = _AnyPassword(context)  # an impostor admits whoever knocks
    gate.start()
    fake = context.socket(zmq.ROUTER)
    fake.plain_server = True
    fake.zap_domain = b"anything"
    port = fake.bind_to_random_port("tcp://127.0.0.1")
    received: list[bytes] = []

    def impostor() -> None:
        if fake.poll(10_000):
            identity, head, *rest = fake.recv_multipart()
            request = P.parse_request(head, rest)
            received.append(request.op)
            bomb = cloudpickle.dumps(Bomb(tmp_path / "never"))
            reply = P.reply_frames(request.seq, P.REPLY_OK, [b"x" * 32, bomb])
            fake.send_multipart([identity, *reply])

    thread = threading.Thread(target=impostor, daemon=True)
    thread.start()
    grant = {
        "job_id": "feedface-0001",
        "address": f"127.0.0.1:{port}",
        "mechanism": "plain",
        "max_message_bytes": 1 << 20,
    }
    channel = ActorChannel(client, grant, "Echo")
    with pytest.raises(_JobUnreachable, match="failed to prove"):
        channel.verify()
    channel.close(notify=True, release=False)
    thread.join(5)
    fake.close(linger=0)
    gate.stop()
    context.term()
    assert received == [P.OP_HELLO] and not (tmp_path / "never").exists()


def _fuzz_frames(rng: random.Random, tags: list[bytes]) -> list[bytes]:
    junk: list[object] = [
        None,
        7,
        -1,
        2**70,
        "x" * 300,
        [1, "a", None],
        {"jobs": "nope"},
        {"ready": [1, 2]},
        True,
        1.5,
    ]
    keys = ["worker_id", "token", "client_id", "job_id", "jobs", "cpu_num", "seq", "request_id"]
    payload = {rng.choice(keys): rng.choice(junk) for _ in range(rng.randrange(4))}
    choice = rng.randrange(5)
    if choice == 0:
        return [rng.randbytes(rng.randrange(1, 64)) for _ in range(rng.randrange(1, 5))]
    if choice == 1:
        return [rng.choice(tags), json.dumps(rng.choice(junk)).encode()]
    if choice == 2:
        return [rng.choice(tags), b"{" + rng.randbytes(20)]
    if choice == 3:
        return [rng.choice(tags)]
    return [rng.choice(tags), json.dumps(payload).encode()]


def test_bounded_fuzz_of_every_port_is_dropped_and_counted(start_cluster) -> None:
    cluster = start_cluster(2)
    status = cluster.query()
    worker = status["workers"][0]
    job = worker["idle"][0]
    rng = random.Random(0)
    control_tags = [
        getattr(P, n) for n in dir(P) if n.isupper() and isinstance(getattr(P, n), bytes)
    ]
    ops = [P.OP_HELLO, P.OP_INIT, P.OP_CALL, P.OP_GET, P.OP_SET, P.OP_RELEASE, P.OP_PING, b"Z"]
    for address in (cluster.address, worker["address"], job["address"]):  # strangers
        host, port = address.rsplit(":", 1)
        for size in (1, 10, 64, 4096):
            with socket.create_connection((host, int(port)), timeout=2) as raw:
                raw.sendall(rng.randbytes(size))
    for address in (cluster.address, worker["address"]):  # members with malformed messages
        sock = raw_socket(address, cluster.security)
        for _ in range(150):
            sock.send_multipart(_fuzz_frames(rng, control_tags))
        sock.close(linger=2000)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 2000
    cluster.security.dial_job(sock, job["job_id"], "plain")
    sock.connect(f"tcp://{job['address']}")
    sock.send_multipart(P.request_frames(0, P.OP_INIT))  # an INIT without a payload
    sock.send_multipart(P.request_frames(0, P.OP_INIT, "", [b"[]", b"x"]))
    for _ in range(100):
        op, *frames = _fuzz_frames(rng, ops)
        if op != P.OP_INIT:
            name = rng.choice(["", "echo", "x" * 40])
            sock.send_multipart(P.request_frames(rng.randrange(1 << 60), op[:1], name, frames))
    answers = 0
    while sock.poll(1000):
        sock.recv_multipart()
        answers += 1
    sock.close()
    assert answers > 50  # malformed requests are answered with an error, not a crash
    wait_for(
        lambda: (
            cluster.query()["bad_messages"] >= 60
            and cluster.query()["workers"][0]["bad_messages"] >= 60
        ),
        10,
        "the master and the worker to count the malformed messages",
    )
    status = cluster.query()
    assert {w["pid"] for w in status["workers"]} == {worker["pid"]}
    assert any(j["job_id"] == job["job_id"] for j in status["workers"][0]["idle"])
    parl.remote.connect(cluster.address)
    actors = [Echo(), Echo()]
    assert [a.echo(i) for i, a in enumerate(actors)] == [0, 1]
    assert job["job_id"] in {a._xparl_channel.job_id for a in actors}


def test_sizes_are_bounded_per_kind(start_cluster, monkeypatch) -> None:
    monkeypatch.setenv("XPARL_MAX_MESSAGE_MB", "1")  # for the cluster's jobs and this client
    cluster = start_cluster(2)
    member = raw_socket(cluster.address, cluster.security)
    member.send_multipart([P.STATUS, b" " * (P.CONTROL_MAX_BYTES + 1)])  # a huge control frame
    assert not member.poll(500)  # dropped by libzmq before it was read: no answer
    member.close()
    parl.remote.connect(cluster.address)
    actor = Echo()
    big = np.zeros(2**19, dtype=np.float32)  # 2 MiB
    with pytest.raises(parl.remote.SerializeError, match="XPARL_MAX_MESSAGE_MB"):
        actor.echo(big)

    @parl.remote_class
    class Grower:
        def make(self, n: int) -> np.ndarray:
            return np.zeros(n, dtype=np.uint8)

    grower = Grower()
    with pytest.raises(parl.remote.SerializeError, match="more than the 1 MiB"):
        grower.make(2**21)
    assert grower.make(10).shape == (10,) and actor.echo(big[:10]).shape == (10,)
    assert cluster.query()["workers"][0]["pid"] == cluster.workers[0]["pid"]


def test_secret_sources_and_mistakes(tmp_path, monkeypatch) -> None:
    loose = tmp_path / "loose"
    loose.write_text("s" * 40)
    loose.chmod(0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        read_secret_file(loose)
    short = tmp_path / "short"
    short.write_text("abc")
    short.chmod(0o600)
    with pytest.raises(ValueError, match="at least 16"):
        read_secret_file(short)
    with pytest.raises(ValueError, match="does not exist"):
        read_secret_file(tmp_path / "missing")
    good = tmp_path / "good"
    good.write_text("g" * 40 + "\n")
    good.chmod(0o600)
    monkeypatch.setenv(SECRET_ENV, "e" * 40)
    assert find_security("10.0.0.1:1", good).secret == "g" * 40  # the file wins
    assert find_security("10.0.0.1:1").secret == "e" * 40
    monkeypatch.delenv(SECRET_ENV)
    with pytest.raises(AuthenticationError) as missing:  # never a silent downgrade
        find_security("10.0.0.1:1")
    for where in ("--secret-file", SECRET_ENV, str(Path(os.environ["XPARL_HOME"]) / "clusters")):
        assert where in str(missing.value)
    assert find_security("10.0.0.1:1", insecure=True).secret is None  # only when asked for
    with pytest.raises(ValueError, match="exclude"):
        find_security("10.0.0.1:1", good, insecure=True)
    with pytest.raises(ValueError, match="loopback only"):
        LocalCluster.start(1, host="0.0.0.0", mode=Mode.INSECURE)
    result = _xparl("start", "--port", "1", "--insecure", "--host", "0.0.0.0")
    assert result.returncode != 0 and "loopback only" in result.stderr


def test_everything_the_cluster_writes_is_owner_only(start_cluster, tmp_path, monkeypatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "token.txt").write_text("api-token")
    monkeypatch.chdir(tmp_path)
    cluster = start_cluster(1)
    parl.remote.connect(cluster.address, distributed_files=["data"])

    @parl.remote_class
    class Talker:
        def say(self) -> str:
            print("an api token in a log")
            return open("data/token.txt").read()

    talker = Talker()  # alive while its files are checked
    assert talker.say() == "api-token"
    loose = []
    for path in [cluster.data_dir, *cluster.data_dir.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            loose.append((str(path), oct(mode)))
    assert loose == []
    assert list(cluster.data_dir.rglob("files/*/data/token.txt"))  # the shipped copy was checked
    home = Path(os.environ["XPARL_HOME"])
    assert stat.S_IMODE((home / "clusters").stat().st_mode) == 0o700
    shutil.rmtree(tmp_path / "data")


@contextlib.contextmanager
def _other_account() -> Iterator[tuple[list[str], int | None]]:
    """The command prefix and uid of another account: a temporary user when this runs as root
    (removed afterwards), else this account (the squatter then differs by its XPARL_HOME)."""
    name = f"xparlsq{os.getpid()}"
    made = os.geteuid() == 0 and shutil.which("setpriv") and shutil.which("useradd")
    if made:
        add = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name]
        made = subprocess.run(add, capture_output=True).returncode == 0
    if not made:
        yield [], None
        return
    user = pwd.getpwnam(name)
    try:
        ids = [f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
        yield ["setpriv", *ids, "--"], user.pw_uid
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def _python_for_everyone(folder: Path) -> str:
    """An interpreter with this environment's packages that any account can run: a venv of
    the system Python sharing this venv's site-packages (this one may live in root's home)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/bin:/usr/local/bin") or sys.executable
    site = Path(sys.prefix) / "lib" / version / "site-packages"
    (folder / "bin").mkdir(parents=True)
    (folder / "lib" / version).mkdir(parents=True)
    (folder / "bin" / "python").symlink_to(system)
    (folder / "lib" / version / "site-packages").symlink_to(site)
    (folder / "pyvenv.cfg").write_text(f"home = {Path(system).parent}\n")
    for path in (folder, *folder.rglob("*")):
        if not path.is_symlink():
            path.chmod(0o755)
    return str(folder / "bin" / "python")


@contextlib.contextmanager
def _squatter(port: int) -> Iterator[str]:
    """An --insecure cluster of another account on ``port`` of loopback; stopped by its pids."""
    top = Path(tempfile.mkdtemp(prefix="xparl-squatter-"))
    top.chmod(0o755)
    home = top / "data"
    with _other_account() as (prefix, uid):
        python = sys.executable
        if uid is not None:
            python = _python_for_everyone(top / "python")
            home.mkdir(mode=0o700)
            os.chown(home, uid, -1)
        env = {**os.environ, "XPARL_HOME": str(home)}
        env.pop(SECRET_ENV, None)
        start = ["start", "--port", str(port), "--insecure", "--cpu_num", "1", "--no-monitor"]
        command = [*prefix, python, "-m", "parl.remote.cli", *start]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
        record = home / "clusters" / str(port)
        processes: list[dict] = []
        try:
            assert result.returncode == 0, result.stderr
            squatter = LocalCluster.load(record)
            processes = squatter.processes()
            if uid is not None:
                assert psutil.Process(squatter.master["pid"]).uids().real == uid
            yield squatter.address
        finally:
            for process in processes:
                stop_process(process)
            wait_for(lambda: gone([p["pid"] for p in processes]), 10, "the squatter to stop")
            shutil.rmtree(top, ignore_errors=True)


def test_no_secret_no_connection_and_no_silent_downgrade(start_cluster, monkeypatch) -> None:
    """A port squatter's --insecure cluster gets nothing of a client that found no secret, or
    a stale one; insecure is used only when asked for."""
    monkeypatch.delenv(SECRET_ENV, raising=False)
    port = free_port()
    owner = start_cluster(1, port=port)
    for alias in ("localhost", "127.0.0.1", "[::1]"):  # loopback names share the record
        assert find_security(f"{alias}:{port}").secret == owner.security.secret
    parl.remote.connect(f"localhost:{port}")
    assert Echo().echo(1) == 1
    parl.remote.disconnect()
    owner.stop()  # as if it crashed: its record stays, and another account takes the port
    with _squatter(port) as address:

        def squatter_clients() -> int:
            return len(query(address, P.STATUS, security=Security(None))["clients"])

        with pytest.raises(AuthenticationError, match="refused this client"):
            parl.remote.connect(f"localhost:{port}")  # the stale record's secret: refused
        assert _xparl("stop", "--port", str(port)).returncode == 0  # removes the record
        with pytest.raises(AuthenticationError, match="no cluster secret") as missing:
            parl.remote.connect(f"127.0.0.1:{port}")
        assert "--secret-file" in str(missing.value) and SECRET_ENV in str(missing.value)
        for command in (["status"], ["connect", "--cpu_num", "1"]):
            refused = _xparl(*command, "--address", address)
            assert refused.returncode != 0 and "no cluster secret" in refused.stderr
            assert "Traceback" not in refused.stderr
        assert squatter_clients() == 0  # no hello, no class, no argument, no file
        assert _xparl("status", "--address", address, "--insecure").returncode == 0
        parl.remote.connect(address, insecure=True)  # on purpose: then it is reached
        assert squatter_clients() == 1
        parl.remote.disconnect()


def test_a_client_with_the_secret_refuses_a_master_that_says_insecure(tmp_path) -> None:
    """The mode in the master's answer is checked too (a holder of the secret lying about it)."""
    security = Security("m" * 40)
    context = zmq.Context()
    keeper = security.start_gatekeeper(context)
    master = context.socket(zmq.ROUTER)
    security.serve_control(master)
    port = master.bind_to_random_port("tcp://127.0.0.1")
    seen: list[bytes] = []

    def answer() -> None:
        if master.poll(10_000):
            identity, tag, _ = master.recv_multipart()
            seen.append(tag)
            reply = {**P.identity(), "master": f"127.0.0.1:{port}", "mode": "insecure"}
            master.send_multipart([identity, P.ACK, P.encode(reply)])

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        with pytest.raises(AuthenticationError, match="without authentication"):
            Client(f"127.0.0.1:{port}", None, Timeouts(), security)
    finally:
        thread.join(10)
        master.close(linger=0)
        keeper.stop()
        context.term()
    assert seen == [P.HELLO]  # nothing but the hello reached it


def test_handshakes_hung_up_are_not_reported_as_refusals(start_cluster) -> None:
    # Workers that give up waiting on a master busy with a burst of registrations hang up
    # mid-handshake and redial; `xparl status` called that "refused", which reads as a wrong
    # secret.
    cluster = start_cluster(0)
    host, port = cluster.address.split(":")
    greeting = b"\xff" + bytes(8) + b"\x7f\x03\x00" + b"CURVE".ljust(20, b"\0") + bytes(32)
    for _ in range(5):
        with socket.create_connection((host, int(port))) as peer:
            peer.sendall(greeting)  # a ZMTP 3.0 greeting, then gone before the handshake
            peer.recv(64)
    wait_for(lambda: cluster.query()["handshakes_hung_up"] >= 5, 10, "5 hang-ups counted")
    assert cluster.query()["refused_connections"] == 0
    text = subprocess.run(
        [sys.executable, "-m", "parl.remote.cli", "status", "--address", cluster.address],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "5 connection(s) hung up during their handshake" in text and "refused" not in text


def test_a_stranger_gone_before_its_key_is_judged_counts_as_refused(monkeypatch) -> None:
    """A peer offering a CURVE key the gatekeeper denies, closed while the gatekeeper is still
    judging it: libzmq's monitor reports a hang-up (no answer reached the peer), but the peer
    did fail authentication, and the master's tally counts it refused, not hung up."""
    import logging

    from parl.remote import security as security_module

    asked, judged = threading.Event(), threading.Event()
    judge = security_module._MemberKeys.callback

    def slow_callback(self: object, domain: str, key: bytes) -> bool:
        asked.set()
        judged.wait(10)
        return judge(self, domain, key)  # type: ignore[arg-type]

    monkeypatch.setattr(security_module._MemberKeys, "callback", slow_callback)
    security = Security("s" * 32)
    context = zmq.Context()
    keeper = security.start_gatekeeper(context)
    server = context.socket(zmq.ROUTER)
    security.serve_control(server)
    port = server.bind_to_random_port("tcp://127.0.0.1")
    watch = P.Watch(server, 0, "refused", logging.getLogger("test"), bound=True)
    stranger = context.socket(zmq.DEALER)
    public, secret = zmq.curve_keypair()  # the cluster's server key, but not a member's key
    stranger.curve_serverkey, stranger.curve_publickey = security._server_keys[0], public
    stranger.curve_secretkey = secret
    try:
        stranger.connect(f"tcp://127.0.0.1:{port}")
        assert asked.wait(10), "the gatekeeper was never asked"
        stranger.close(linger=0)
        wait_for(lambda: watch.drain() or watch.hung_up, 10, "the monitor to see the peer gone")
        judged.set()
        wait_for(lambda: keeper.denied == 1, 10, "the gatekeeper's denial")
        watch.drain()
        assert (watch.refused, watch.hung_up) == (0, 1)  # what the monitor alone says
        assert watch.tally(keeper.denied) == (1, 0)
    finally:
        judged.set()
        watch.close(server)
        server.close(linger=0)
        keeper.stop()
        context.term()
