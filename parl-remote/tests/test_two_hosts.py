"""Two machines played by network namespaces: a worker on another host joins the master across
a bridge with encryption on and serves an actor; a peer on a third host without the secret is
refused. The bridge, the veth pairs and the namespaces are created and removed here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import parl
import parl.remote

import numpy as np
import pytest

from .conftest import gone, init_frames, wait_for

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0 or shutil.which("ip") is None,
    reason="playing two hosts needs Linux network namespaces: root and iproute2 (`ip netns`)",
)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


class Hosts:
    """A bridge in this namespace (the master's host) and two namespaces on it."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:5]
        self.bridge = f"xpb{tag}"
        self.subnet = f"10.213.{int(tag, 16) % 200 + 20}"
        self.master_ip = f"{self.subnet}.1"
        self.namespaces: dict[str, str] = {}
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.master_ip}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index, role in enumerate(("worker", "stranger"), start=2):
            name = f"xp{role[0]}{tag}"
            _ip("netns", "add", name)
            self.namespaces[role] = name
            _ip("link", "add", f"{name}a", "type", "veth", "peer", "name", f"{name}b")
            _ip("link", "set", f"{name}b", "netns", name)
            _ip("link", "set", f"{name}a", "master", self.bridge)
            _ip("link", "set", f"{name}a", "up")
            _ip("-n", name, "addr", "add", f"{self.subnet}.{index}/24", "dev", f"{name}b")
            _ip("-n", name, "link", "set", f"{name}b", "up")
            _ip("-n", name, "link", "set", "lo", "up")

    def ip(self, role: str) -> str:
        return f"{self.subnet}.{2 + list(self.namespaces).index(role)}"

    def run(self, role: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["ip", "netns", "exec", self.namespaces[role], *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )

    def remove(self) -> None:
        for name in self.namespaces.values():
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, timeout=30)


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    try:
        made = Hosts()
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot create network namespaces here: {exc.stderr.strip()}")
    try:
        yield made
    finally:
        made.remove()


@parl.remote_class
class Where:
    def netns(self) -> str:
        return os.readlink("/proc/self/ns/net")

    def echo(self, value: object) -> object:
        return value


STRANGER = """
import json, sys, parl, zmq

try:
    parl.connect(sys.argv[1], connect_timeout=5)
    print("CONNECTED")
except Exception as exc:
    print(type(exc).__name__, exc, flush=True)
sock = zmq.Context.instance().socket(zmq.DEALER)
sock.linger = 0
sock.connect("tcp://" + sys.argv[2])
sock.send_multipart([bytes.fromhex(frame) for frame in json.load(open(sys.argv[3]))])
print("job answered" if sock.poll(1500) else "job refused", flush=True)
"""


@pytest.mark.slow
def test_a_worker_on_another_host_joins_encrypted_and_a_stranger_is_refused(
    hosts: Hosts, start_cluster, tmp_path: Path
) -> None:
    cluster = start_cluster(0, host=hosts.master_ip)  # beyond loopback: encryption is forced
    assert cluster.security.mode.value == "encrypt"
    secret = tmp_path / "secret"
    shutil.copy(cluster.secret_file, secret)
    secret.chmod(0o600)
    remote_home = {**os.environ, "XPARL_HOME": str(tmp_path / "remote-home")}
    join = [sys.executable, "-m", "parl.remote.cli", "connect", "--address", cluster.address]
    worker_ip = hosts.ip("worker")
    joined = hosts.run(
        "worker",
        [*join, "--cpu_num", "1", "--host", worker_ip, "--secret-file", str(secret)],
        remote_home,
    )
    out = joined.communicate(timeout=60)[0]
    try:
        assert joined.returncode == 0 and "added 1 CPUs" in out, out
        parl.remote.connect(cluster.address)
        actor = Where()
        assert actor._xparl_channel.address.startswith(worker_ip + ":")
        assert actor._xparl_channel.mechanism == "curve"
        assert actor.netns() != os.readlink("/proc/self/ns/net")  # it runs on the other host
        array = np.arange(1 << 18, dtype=np.float32)
        np.testing.assert_array_equal(actor.echo(array), array)

        marker = tmp_path / "pwned"
        frames = tmp_path / "init.json"
        frames.write_text(json.dumps([f.hex() for f in init_frames(marker)]))
        stranger_home = {**os.environ, "XPARL_HOME": str(tmp_path / "stranger-home")}
        # A guessed secret and an insecure worker dial and are refused; no secret at all is
        # refused before dialing.
        guessing = {**stranger_home, "PARL_CLUSTER_SECRET": "g" * 64}
        stranger = hosts.run(
            "stranger",
            [
                sys.executable,
                "-c",
                STRANGER,
                cluster.address,
                actor._xparl_channel.address,
                str(frames),
            ],
            guessing,
        )
        intruder = hosts.run("stranger", [*join, "--cpu_num", "8", "--insecure"], stranger_home)
        no_secret = hosts.run("stranger", [*join, "--cpu_num", "8"], stranger_home)
        said = stranger.communicate(timeout=60)[0]
        assert "AuthenticationError" in said and "job refused" in said, said
        intruder_said = intruder.communicate(timeout=60)[0]
        assert intruder.returncode != 0 and "refused" in intruder_said, intruder_said
        no_secret_said = no_secret.communicate(timeout=60)[0]
        assert no_secret.returncode != 0 and "no cluster secret" in no_secret_said
        assert not marker.exists()
        status = cluster.query()
        assert status["cpus_total"] == 1 and status["refused_connections"] >= 2
        assert actor.echo("still serving") == "still serving"
    finally:
        parl.remote.disconnect()
        records = (tmp_path / "remote-home").glob("connected/*/worker-*.json")
        pids = [json.loads(path.read_text())["pid"] for path in records]
        stop = [sys.executable, "-m", "parl.remote.cli", "stop"]
        subprocess.run(stop, env=remote_home, capture_output=True, timeout=60)
        wait_for(lambda: gone(pids), 10, "the remote worker to stop")
