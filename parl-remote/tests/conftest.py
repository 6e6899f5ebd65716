"""Fixtures: real xparl clusters on 127.0.0.1 with short timeouts, stopped after each use."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from parl.remote.testing import processes_gone as gone
from parl.remote.testing import wait_for

import psutil
import pytest

FAST_ENV = {
    "XPARL_HEARTBEAT_INTERVAL": "0.1",
    "XPARL_HEARTBEAT_TIMEOUT": "2.5",
    "XPARL_CONNECT_TIMEOUT": "3",
    "XPARL_REGISTER_TIMEOUT": "6",
    "XPARL_RESOURCE_TIMEOUT": "10",
    "XPARL_MEMORY_CHECK_INTERVAL": "0.05",
    "XPARL_HOST": "127.0.0.1",
}


def free_port() -> int:
    """A port nothing listens on right now (127.0.0.1)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Script:
    """A Python script (source text, or a file) run as a separate client process; its stdout
    lines are collected."""

    def __init__(self, code: str | Path, *args: str, env: dict[str, str] | None = None) -> None:
        program = [str(code)] if isinstance(code, Path) else ["-c", code]
        self.proc = subprocess.Popen(
            [sys.executable, *program, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env if env is not None else dict(os.environ),
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def saw(self, prefix: str) -> list[str]:
        """Lines that start with ``prefix``."""
        return [line for line in list(self.lines) if line.startswith(prefix)]

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 30) -> str:
        """Close stdin, wait for the exit, and return the last line."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait(timeout)
        self._reader.join(timeout)
        return self.lines[-1] if self.lines else ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def scripts() -> Iterator[Callable[..., Script]]:
    """Factory of client scripts; each one still running at teardown is killed (by pid)."""
    started: list[Script] = []

    def run(code: str | Path, *args: str, env: dict[str, str] | None = None) -> Script:
        script = Script(code, *args, env=env)
        started.append(script)
        return script

    yield run
    for script in started:
        script.kill()


def raw_socket(address: str, security: Any, kind: int = 0) -> Any:
    """A DEALER on ``address`` secured as a cluster member with ``security`` (or not)."""
    import zmq

    sock = zmq.Context.instance().socket(kind or zmq.DEALER)
    sock.linger = 0
    if security is not None:
        security.dial_control(sock)
    sock.connect(f"tcp://{address}")
    return sock


def init_frames(marker: Path) -> list[Any]:
    """The frames of an INIT whose constructor writes ``marker``: proof that code ran. (The
    class is local, so it travels by value and would run in any job that accepted it.)"""
    from parl.remote import protocol as P

    import cloudpickle

    class Pwned:
        def __init__(self, path: str) -> None:
            Path(path).write_text("a stranger ran code here")

    spec = P.encode(
        {"class_name": "Pwned", "client_id": "0" * 32, "gpus": [], "max_message_bytes": 1 << 20}
    )
    payload = [spec, b"[]", b"", cloudpickle.dumps(Pwned), cloudpickle.dumps(((str(marker),), {}))]
    return P.request_frames(0, P.OP_INIT, "", payload)


def tree(cluster: object) -> list[psutil.Process]:
    """The processes of a cluster: its master and workers and their jobs."""
    found = []
    for record in cluster.processes():  # type: ignore[attr-defined]
        try:
            proc = psutil.Process(record["pid"])
            found += [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return found


def stop_and_check(cluster: object, timeout: float = 5.0) -> None:
    """Stop a cluster, check every one of its processes is gone (no leftovers), and remove its
    folder (secret and logs): a test cluster, like an embedded one, belongs to one run."""
    procs = tree(cluster)
    cluster.stop()  # type: ignore[attr-defined]
    wait_for(lambda: gone([p.pid for p in procs]), timeout, "the cluster's processes to exit")
    shutil.rmtree(cluster.data_dir, ignore_errors=True)  # type: ignore[attr-defined]


@pytest.fixture(scope="session", autouse=True)
def _seed_and_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    random.seed(0)
    home = tmp_path_factory.mktemp("xparl_home")
    saved = {k: os.environ.get(k) for k in [*FAST_ENV, "XPARL_HOME"]}
    os.environ.update(FAST_ENV)
    os.environ["XPARL_HOME"] = str(home)
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def start_cluster() -> Iterator[Callable[..., object]]:
    """Factory of clusters; every cluster (and the client) is stopped at teardown."""
    from parl.remote import disconnect
    from parl.remote.cluster import LocalCluster

    started: list[LocalCluster] = []

    def start(cpu_num: int = 2, **kwargs: object) -> LocalCluster:
        cluster = LocalCluster.start(cpu_num, **kwargs)
        started.append(cluster)
        return cluster

    yield start
    disconnect()
    for cluster in started:
        stop_and_check(cluster)


@pytest.fixture(scope="module")
def shared_cluster() -> Iterator[object]:
    """One 4-CPU cluster for the happy-path tests of a module."""
    from parl.remote import disconnect
    from parl.remote.cluster import LocalCluster

    cluster = LocalCluster.start(4)
    yield cluster
    disconnect()
    stop_and_check(cluster)


@pytest.fixture
def connected(shared_cluster: object) -> Iterator[object]:
    """A client connected to the shared cluster."""
    import parl.remote

    client = parl.remote.connect(shared_cluster.address)  # type: ignore[attr-defined]
    yield client
    parl.remote.disconnect()
    wait_for(
        lambda: shared_cluster.query()["cpus_used"] == 0,  # type: ignore[attr-defined]
        5,
        "the actors' CPUs to return to the pool",
    )
