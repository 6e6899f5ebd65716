"""Start, record, find and stop xparl clusters on this machine.

Every cluster started here (``xparl start`` or the embedded ``parl.connect()``) gets a folder
``$XPARL_HOME/clusters/<port>/`` holding ``cluster.json`` (address and the pids with their start
times), the master's and workers' logs, and the actors' logs. Workers added with
``xparl connect`` are recorded under ``$XPARL_HOME/connected/``. ``stop`` signals only recorded
pids whose start time still matches, so it never touches another cluster or a recycled pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parl.remote import protocol as P
from parl.remote.config import Timeouts, data_home, default_host, python_command

import psutil
import zmq

__all__ = [
    "LocalCluster",
    "connected_workers",
    "query",
    "recorded_clusters",
    "start_worker",
    "stop_process",
]


def _record(pid: int) -> dict[str, Any]:
    return {"pid": pid, "create_time": psutil.Process(pid).create_time()}


def _is_running(record: dict[str, Any]) -> bool:
    try:
        proc = psutil.Process(int(record["pid"]))
        return abs(proc.create_time() - float(record["create_time"])) < 0.05 and (
            proc.status() != psutil.STATUS_ZOMBIE
        )
    except (psutil.Error, KeyError, ValueError):
        return False


def stop_process(record: dict[str, Any], timeout: float = 5.0) -> None:
    """SIGTERM a recorded process (only if its start time matches), SIGKILL it after ``timeout``."""
    if not _is_running(record):
        return
    proc = psutil.Process(int(record["pid"]))
    try:
        proc.terminate()
        proc.wait(timeout)
    except psutil.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)
    except psutil.NoSuchProcess:
        pass


def _wait_file(path: Path, proc: subprocess.Popen[bytes], timeout: float, what: str) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            info = json.loads(path.read_text())
            if "error" in info:
                raise RuntimeError(f"{what} failed to start: {info['error']}")
            return info
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} before it was ready")
        time.sleep(0.01)
    proc.kill()
    raise RuntimeError(f"{what} was not ready within {timeout:g} s")


def _spawn_ready(
    cmd: list[str],
    log_path: Path,
    ready: Path,
    timeouts: Timeouts | None,
    detach: bool,
    ready_timeout: float,
    what: str,
) -> tuple[subprocess.Popen[bytes], dict]:
    """Start a cluster process logging to ``log_path``; wait until it writes ``ready``."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_child_env(timeouts),
            start_new_session=detach,
        )
    return proc, _wait_file(ready, proc, ready_timeout, what)


def _child_env(timeouts: Timeouts | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("XPARL", None)
    if timeouts is not None:
        env.update(timeouts.as_env())
    return env


def start_worker(
    address: str,
    cpu_num: int,
    data_dir: Path,
    *,
    gpus: str = "",
    host: str | None = None,
    advertise_host: str | None = None,
    port_range: str | None = None,
    timeouts: Timeouts | None = None,
    ready_timeout: float = 30.0,
    detach: bool = False,
) -> dict[str, Any]:
    """Start a worker process for the master at ``address`` and wait until it registered.

    Returns:
        The worker's record: pid, create_time, worker_id, address.
    """
    if cpu_num < 0:
        raise ValueError(f"cpu_num={cpu_num} must be >= 0")
    data_dir.mkdir(parents=True, exist_ok=True)
    ready = data_dir / f"worker-{uuid.uuid4().hex[:8]}.ready"
    cmd = [
        *python_command(),
        "-m",
        "parl.remote.worker",
        "--address",
        address,
        "--cpu_num",
        str(cpu_num),
        "--host",
        host or default_host(),
        "--data-dir",
        str(data_dir),
        "--ready-file",
        str(ready),
    ]
    if gpus:
        cmd += ["--gpu", gpus]
    if advertise_host:
        cmd += ["--advertise-host", advertise_host]
    if port_range:
        cmd += ["--port-range", port_range]
    try:
        proc, info = _spawn_ready(
            cmd,
            data_dir / "workers.log",
            ready,
            timeouts,
            detach,
            ready_timeout,
            f"the worker for {address}",
        )
    finally:
        ready.unlink(missing_ok=True)
    return {
        **_record(proc.pid),
        "worker_id": info["worker_id"],
        "address": info["address"],
        "master": address,
    }


@dataclass
class LocalCluster:
    """A master (and its local workers) started from this machine.

    Attributes:
        address: ``host:port`` clients connect to.
        data_dir: The cluster's folder (``cluster.json``, logs).
        master: Record (pid, create_time) of the master process.
        workers: Records of the local workers.
    """

    address: str
    data_dir: Path
    master: dict[str, Any]
    workers: list[dict[str, Any]] = field(default_factory=list)
    timeouts: Timeouts | None = None
    embedded: bool = False

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    @classmethod
    def start(
        cls,
        cpu_num: int,
        *,
        port: int = 0,
        host: str | None = None,
        advertise_host: str | None = None,
        gpus: str = "",
        port_range: str | None = None,
        timeouts: Timeouts | None = None,
        embedded: bool = False,
        detach: bool = False,
        ready_timeout: float = 30.0,
    ) -> LocalCluster:
        """Start a master and (if ``cpu_num`` or ``gpus``) a local worker; return when ready.

        Args:
            cpu_num: CPUs of the local worker (0 and no GPUs: master only).
            port: Master port (0: a free port of ``port_range``).
            host: Host to bind (default ``XPARL_HOST`` or 127.0.0.1).
            advertise_host: Host others dial (default: ``host``).
            gpus: Comma-separated GPU ids for the local worker.
            port_range: ``LOW-HIGH`` for every random port.
            timeouts: Timeouts handed to the processes (default: from the environment).
            embedded: Stop the cluster when this process exits, even if it is killed.
            detach: Start the processes in their own session (survive the calling shell).
            ready_timeout: Seconds to wait for each process to be ready.
        """
        host = host or default_host()
        clusters = data_home() / "clusters"
        staging = clusters / f".starting-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        staging.mkdir(parents=True)
        ready = staging / "master.ready"
        cmd = [
            *python_command(),
            "-m",
            "parl.remote.master",
            "--host",
            host,
            "--port",
            str(port),
            "--ready-file",
            str(ready),
        ]
        if advertise_host:
            cmd += ["--advertise-host", advertise_host]
        if port_range:
            cmd += ["--port-range", port_range]
        if embedded:
            cmd += ["--owner-pid", str(os.getpid())]
        try:
            proc, info = _spawn_ready(
                cmd,
                staging / "master.log",
                ready,
                timeouts,
                detach,
                ready_timeout,
                f"the master on {host}:{port}",
            )
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        data_dir = clusters / str(info["port"])
        if data_dir.exists():
            shutil.rmtree(data_dir, ignore_errors=True)
        staging.rename(data_dir)
        (data_dir / "master.ready").unlink(missing_ok=True)
        cluster = cls(info["address"], data_dir, _record(proc.pid), [], timeouts, embedded)
        cluster.save()
        if cpu_num > 0 or gpus:
            try:
                cluster.add_worker(
                    cpu_num,
                    gpus=gpus,
                    host=host,
                    advertise_host=advertise_host,
                    port_range=port_range,
                    detach=detach,
                    ready_timeout=ready_timeout,
                )
                cluster.wait_for_jobs(1, ready_timeout)
            except BaseException:
                cluster.stop()
                raise
        return cluster

    def add_worker(self, cpu_num: int, **kwargs: Any) -> dict[str, Any]:
        """Start one more local worker for this cluster and record it."""
        record = start_worker(
            self.address, cpu_num, self.data_dir, timeouts=self.timeouts, **kwargs
        )
        self.workers.append(record)
        self.save()
        return record

    def wait_for_jobs(self, count: int, timeout: float) -> dict[str, Any]:
        """Wait until the cluster has ``count`` warm jobs ready; return the status."""
        deadline = time.monotonic() + timeout
        while True:
            status = query(self.address, P.STATUS, timeout=max(0.5, deadline - time.monotonic()))
            if sum(w["idle_jobs"] for w in status["workers"]) >= count:
                return status
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the cluster at {self.address} had fewer than {count} ready "
                    f"jobs after {timeout:g} s; see the logs in {self.data_dir}"
                )
            time.sleep(0.02)

    def save(self) -> None:
        """Write ``cluster.json``."""
        record = {
            "address": self.address,
            "embedded": self.embedded,
            "owner_pid": os.getpid(),
            "master": self.master,
            "workers": self.workers,
        }
        tmp = self.data_dir / "cluster.json.tmp"
        tmp.write_text(json.dumps(record, indent=1))
        tmp.replace(self.data_dir / "cluster.json")

    def processes(self) -> list[dict[str, Any]]:
        """Records of the cluster's master and workers."""
        return [self.master, *self.workers]

    def is_running(self) -> bool:
        """True while the master process runs."""
        return _is_running(self.master)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the workers (which stop their jobs), then the master."""
        for record in self.workers:
            stop_process(record, timeout)
        stop_process(self.master, timeout)
        for record in self.processes():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(record["pid"]), os.WNOHANG)

    @classmethod
    def load(cls, data_dir: Path) -> LocalCluster:
        """Read a cluster's record from its folder."""
        record = json.loads((data_dir / "cluster.json").read_text())
        return cls(
            record["address"],
            data_dir,
            record["master"],
            record["workers"],
            None,
            record.get("embedded", False),
        )


def recorded_clusters() -> Iterator[LocalCluster]:
    """Clusters recorded under ``$XPARL_HOME/clusters`` (running or not)."""
    root = data_home() / "clusters"
    if not root.is_dir():
        return
    for folder in sorted(root.iterdir()):
        if (folder / "cluster.json").is_file():
            try:
                yield LocalCluster.load(folder)
            except (OSError, ValueError, KeyError):
                continue


def connected_workers() -> Iterator[tuple[Path, dict[str, Any]]]:
    """Workers recorded by ``xparl connect`` under ``$XPARL_HOME/connected``."""
    root = data_home() / "connected"
    if not root.is_dir():
        return
    for path in sorted(root.glob("*/worker-*.json")):
        try:
            yield path, json.loads(path.read_text())
        except (OSError, ValueError):
            continue


def query(
    address: str, tag: bytes, payload: dict[str, Any] | None = None, timeout: float = 3.0
) -> dict[str, Any]:
    """Send one control message to a master or worker and return its JSON answer.

    Raises:
        ConnectionError: Nothing answered within ``timeout``.
    """
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    try:
        sock.connect(f"tcp://{address}")
        sock.send_multipart([tag, P.encode(payload or {})])
        if not sock.poll(int(timeout * 1000)):
            raise ConnectionError(f"nothing answered at {address} within {timeout:g} s")
        frames = sock.recv_multipart()
        return P.decode(frames[-1])
    finally:
        sock.close()
