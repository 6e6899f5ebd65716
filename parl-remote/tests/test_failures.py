"""Failures on real clusters: dead actors, workers and masters, bad input, version mismatch."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import parl
import parl.remote
from parl.remote import ActorDiedError, VersionMismatchError
from parl.remote.cluster import query

import pytest

from .conftest import wait_for


@parl.remote_class
class Sleeper:
    """An actor whose calls can be made to block."""

    def ping(self) -> str:
        return "pong"

    def pid(self) -> int:
        return os.getpid()

    def block(self, marker: str, seconds: float) -> None:
        Path(marker).write_text("started")
        time.sleep(seconds)


def _call_in_thread(fn, *args):  # type: ignore[no-untyped-def]
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = fn(*args)
        except BaseException as exc:
            outcome["error"] = exc
            outcome["at"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_killed_actor_fails_fast_and_frees_its_cpu(start_cluster, tmp_path: Path) -> None:
    cluster = start_cluster(2)
    parl.remote.connect(cluster.address)
    actor = Sleeper()
    marker = tmp_path / "started"
    thread, outcome = _call_in_thread(actor.block, str(marker), 60)
    wait_for(marker.exists, 10, "the call to start")
    killed_at = time.monotonic()
    os.kill(actor._xparl_channel.pid, signal.SIGKILL)
    thread.join(timeout=5)
    assert isinstance(outcome.get("error"), ActorDiedError), outcome
    assert outcome["at"] - killed_at < 1.0
    assert "died" in str(outcome["error"])
    with pytest.raises(ActorDiedError):
        actor.ping()
    wait_for(lambda: query(cluster.address, b"status")["cpus_used"] == 0, 2, "the CPU back")
    assert Sleeper().ping() == "pong"


def test_killed_worker_fails_its_actors_and_is_dropped(start_cluster) -> None:
    cluster = start_cluster(1)
    cluster.add_worker(1)
    parl.remote.connect(cluster.address)
    first, second = Sleeper(), Sleeper()
    status = query(cluster.address, b"status")
    assert len(status["workers"]) == 2 and status["cpus_vacant"] == 0
    victim = next(w for w in status["workers"] if w["worker_id"] == first._xparl_channel.job_id[:8])
    survivor_id = next(w["worker_id"] for w in status["workers"] if w is not victim)
    killed_at = time.monotonic()
    os.kill(victim["pid"], signal.SIGKILL)
    with pytest.raises(ActorDiedError):
        wait_for(lambda: first.ping() and False, 5, "the actor to fail")
    assert time.monotonic() - killed_at < 5
    assert second.ping() == "pong"
    wait_for(lambda: len(query(cluster.address, b"status")["workers"]) == 1, 5, "the drop")
    del second
    third = Sleeper()
    assert third._xparl_channel.job_id.startswith(survivor_id)


def test_connect_to_nothing_fails_fast() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(parl.remote.ConnectError, match=f"127.0.0.1:{port}"):
        parl.remote.connect(f"127.0.0.1:{port}")
    assert time.monotonic() - start < 5


def test_version_mismatch_is_a_clear_error(start_cluster, monkeypatch) -> None:
    cluster = start_cluster(1)
    monkeypatch.setattr("parl.remote.protocol.remote_version", lambda: "0.0.1-other")
    with pytest.raises(VersionMismatchError, match="0.0.1-other"):
        parl.remote.connect(cluster.address)
    monkeypatch.undo()
    parl.remote.connect(cluster.address)
    assert Sleeper().ping() == "pong"


def test_killed_client_frees_its_cpus(start_cluster, tmp_path: Path) -> None:
    cluster = start_cluster(2)
    script = tmp_path / "client.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys, time, parl
        @parl.remote_class
        class A:
            def f(self):
                return 1
        parl.connect({cluster.address!r})
        actors = [A(), A()]
        print("ready", flush=True)
        time.sleep(60)
    """)
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert query(cluster.address, b"status")["cpus_used"] == 2
        proc.kill()
        proc.wait(5)
        wait_for(lambda: query(cluster.address, b"status")["cpus_used"] == 0, 5, "the CPUs")
    finally:
        proc.kill()
        proc.wait(5)


def _fill(disk: Path) -> Path:
    """Write a file until ``disk`` has no space left; return it."""
    filler = disk / "filler"
    with open(filler, "wb") as handle:
        try:
            for _ in range(1 << 16):  # bounded: 4 GiB of 64 KiB blocks
                handle.write(b"\0" * (1 << 16))
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0,
    reason="mounting a small tmpfs for the cluster's folder needs root on Linux",
)
def test_a_disk_that_fills_after_start_is_named_when_the_actor_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster's folder (its jobs' logs) on a 4 MiB tmpfs that fills after the cluster
    started: the job dies writing its log, and the client's ActorDiedError says the disk is
    full, where, and how much is free (it said only that the process died)."""
    from parl.remote.cluster import LocalCluster

    from .conftest import stop_and_check

    disk = tmp_path / "disk"
    disk.mkdir(mode=0o700)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(disk)], check=True
    )
    try:
        monkeypatch.setenv("XPARL_HOME", str(disk))
        cluster = LocalCluster.start(1)
        try:
            wait_for(lambda: query(cluster.address, b"status")["workers"][0]["idle"], 20, "a job")
            _fill(disk)
            parl.remote.connect(cluster.address)
            with pytest.raises(ActorDiedError) as died:
                Sleeper()
        finally:
            parl.remote.disconnect()
            stop_and_check(cluster)
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)
    message = str(died.value)
    assert "no space left on the disk holding" in message, message
    assert str(disk) in message and "MiB free" in message, message
