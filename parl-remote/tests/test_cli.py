"""The xparl CLI on real detached clusters: start, connect, status, logs, scoped stop."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import parl
import parl.remote
from parl.remote.cluster import recorded_clusters
from parl.remote.config import DataDirError, writable_data_home

import psutil
import pytest

from .conftest import free_port, gone, wait_for


def xparl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "parl.remote.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def cluster_pids(port: int) -> list[int]:
    for cluster in recorded_clusters():
        if cluster.port == port:
            pids = []
            for record in cluster.processes():
                proc = psutil.Process(record["pid"])
                pids += [proc.pid, *(c.pid for c in proc.children(recursive=True))]
            return pids
    raise AssertionError(f"no recorded cluster on port {port}")


@parl.remote_class
class Talker:
    def say(self, text: str) -> str:
        print(text)
        return text


def test_start_status_logs_and_scoped_stop() -> None:
    first, second = free_port(), free_port()
    out = xparl("start", "--port", str(first), "--cpu_num", "1").stdout
    assert f"127.0.0.1:{first}" in out
    xparl("start", "--port", str(second), "--cpu_num", "1")
    first_pids, second_pids = cluster_pids(first), cluster_pids(second)
    try:
        again = xparl("start", "--port", str(first), "--cpu_num", "1", check=False)
        assert again.returncode != 0 and "already runs" in again.stderr + again.stdout
        added = xparl("connect", "--address", f"127.0.0.1:{second}", "--cpu_num", "1").stdout
        assert "added 1 CPUs" in added
        (status,) = json.loads(xparl("status", "--address", f"127.0.0.1:{second}", "--json").stdout)
        assert status["cluster"]["cpus_total"] == 2 and len(status["workers"]) == 2
        text = xparl("status").stdout
        assert f"Cluster 127.0.0.1:{first}" in text and f"Cluster 127.0.0.1:{second}" in text
        assert "vacant CPUs" in text

        parl.remote.connect(f"127.0.0.1:{second}")
        talker = Talker()
        assert talker.say("hello from the actor log") == "hello from the actor log"
        job_id = parl.remote.actor_id(talker)
        logs = xparl("logs", job_id).stdout
        assert "hello from the actor log" in logs
        assert job_id in xparl("logs").stdout
        del talker
        parl.remote.disconnect()

        stopped = xparl("stop", "--port", str(first)).stdout
        assert f"127.0.0.1:{first}" in stopped
        wait_for(lambda: gone(first_pids), 10, "the first cluster to stop")
        assert not gone(second_pids)
        assert "0 used CPUs" in xparl("status", "--address", f"127.0.0.1:{second}").stdout
    finally:
        parl.remote.disconnect()
        xparl("stop")
    wait_for(lambda: gone(first_pids + second_pids), 10, "every cluster to stop")
    assert "nothing to stop" in xparl("stop").stdout


def test_cli_errors_are_clear(monkeypatch) -> None:
    port = free_port()
    join = ["connect", "--address", f"127.0.0.1:{port}", "--cpu_num", "1"]
    result = xparl(*join, check=False)  # no secret known for that address: not even dialed
    assert result.returncode != 0 and "no cluster secret" in result.stderr
    monkeypatch.setenv("PARL_CLUSTER_SECRET", "s" * 32)
    result = xparl(*join, check=False)
    assert result.returncode != 0 and "no xparl master" in result.stderr
    monkeypatch.delenv("PARL_CLUSTER_SECRET")
    result = xparl("start", "--port", str(port), "--gpu", "a,b", check=False)
    assert result.returncode != 0 and "GPU ids" in result.stderr


def test_xparl_start_again_after_a_master_crash_keeps_the_workers() -> None:
    port = free_port()
    xparl("start", "--port", str(port), "--cpu_num", "1")
    pids = cluster_pids(port)
    try:
        (cluster,) = [c for c in recorded_clusters() if c.port == port]
        os.kill(cluster.master["pid"], signal.SIGKILL)
        wait_for(lambda: gone([cluster.master["pid"]]), 10, "the master to die")
        out = xparl("start", "--port", str(port)).stdout
        assert "1 worker(s) of the earlier master on this port still run" in out, out

        def back() -> bool:
            text = xparl("status", "--address", f"127.0.0.1:{port}", "--json").stdout
            (status,) = json.loads(text)
            return [w["worker_id"] for w in status["workers"]] == [cluster.workers[0]["worker_id"]]

        wait_for(back, 20, "the worker to register with the new master")
        pids += cluster_pids(port)
    finally:
        xparl("stop", "--port", str(port))
    wait_for(lambda: gone(pids), 10, "the cluster to stop")


@contextlib.contextmanager
def _small_file_system(options: str) -> Iterator[Path | None]:
    """A tiny tmpfs mounted for the test (None where this account may not mount)."""
    folder = Path(tempfile.mkdtemp(prefix="xparl-fs-"))
    try:
        mount = ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)]
        mounted = subprocess.run(mount, capture_output=True).returncode == 0
        yield folder if mounted else None
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)
    finally:
        folder.rmdir()


def _one_clear_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and all(w in lines[0] for w in words), lines


def _start_and_connect(home: Path, monkeypatch: pytest.MonkeyPatch, *words: str) -> None:
    monkeypatch.setenv("XPARL_HOME", str(home))
    port = free_port()
    _one_clear_line(xparl("start", "--port", str(port), check=False), str(home), *words)
    join = xparl("connect", "--address", f"127.0.0.1:{port}", "--cpu_num", "1", check=False)
    _one_clear_line(join, str(home), *words)
    with pytest.raises(DataDirError, match=words[-1]):
        parl.remote.connect()


def test_an_unusable_data_folder_is_one_clear_line(tmp_path, monkeypatch) -> None:
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a folder")
    _start_and_connect(in_the_way, monkeypatch, "XPARL_HOME", "a file is in the way")
    with _small_file_system("ro,size=64k") as read_only:
        if read_only is None:  # not root: a folder this account may not write
            locked = tmp_path / "locked"
            locked.mkdir(mode=0o500)
            _start_and_connect(locked / "xparl", monkeypatch, "XPARL_HOME", "may not write")
        else:
            _start_and_connect(read_only / "xparl", monkeypatch, "XPARL_HOME", "read-only")


def test_a_full_disk_is_one_clear_line(monkeypatch) -> None:
    with _small_file_system("size=64k") as disk:
        if disk is None:
            # Not root: the write fails at the OS boundary as on a full disk.
            def full(fd: int) -> None:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            monkeypatch.setattr(os, "fsync", full)
            with pytest.raises(DataDirError, match="the disk is full"):
                writable_data_home()
            return
        with contextlib.suppress(OSError), open(disk / "filler", "wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        _start_and_connect(disk / "xparl", monkeypatch, "XPARL_HOME", "the disk is full")


def test_a_process_that_dies_at_start_says_why(monkeypatch) -> None:
    cause = "OSError: [Errno 28] No space left on device"
    dies = ["/bin/sh", "-c", f"echo {shlex.quote(cause)} >&2; exit 1", "sh"]
    monkeypatch.setenv("XPARL_PYTHON", shlex.join(dies))  # as a master that cannot write
    result = xparl("start", "--port", str(free_port()), "--no-monitor", check=False)
    _one_clear_line(result, "the master", "exited with code 1", cause)


def test_a_joining_worker_keeps_asking_until_the_master_answers(tmp_path, monkeypatch) -> None:
    # A master busy with a burst of registrations answers after more than connect_timeout;
    # here the master is not even started when the worker first asks.
    port = free_port()
    secret = tmp_path / "secret"
    secret.write_text("k" * 64)
    secret.chmod(0o600)
    monkeypatch.setenv("XPARL_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("XPARL_REGISTER_TIMEOUT", "60")
    address = f"127.0.0.1:{port}"
    join = subprocess.Popen(
        [sys.executable, "-m", "parl.remote.cli", "connect", "--address", address,
         "--cpu_num", "1", "--secret-file", str(secret)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip
    log = writable_data_home() / "connected" / f"127.0.0.1_{port}" / "workers.log"
    try:
        wait_for(lambda: log.is_file() and "asking again" in log.read_text(), 30, "a retry")
        xparl("start", "--port", str(port), "--cpu_num", "0", "--secret-file", str(secret))
        out, err = join.communicate(timeout=90)
        assert join.returncode == 0 and "added 1 CPUs" in out, err
        (status,) = json.loads(xparl("status", "--address", address, "--json").stdout)
        assert status["cluster"]["cpus_total"] == 1
    finally:
        join.kill()
        join.wait(timeout=60)
        xparl("stop", "--port", str(port), check=False)
