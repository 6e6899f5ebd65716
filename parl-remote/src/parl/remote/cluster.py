"""Start, record, find and stop xparl clusters on this machine.

Every cluster started here (``xparl start`` or the embedded ``parl.connect()``) gets an
owner-only folder ``$XPARL_HOME/clusters/<port>/`` holding ``cluster.json`` (address, security
mode and the pids with their start times), ``secret`` (the cluster secret), the master's and
workers' logs, and the actors' logs. A master started again on the same port reuses the
secret, so the workers still running get back in. Workers added with ``xparl connect`` are
recorded under ``$XPARL_HOME/connected/``. ``stop`` signals only recorded pids whose start time
still matches, so it never touches another cluster or a recycled pid.

An embedded cluster (``parl.connect()`` without an address) belongs to its program: stopping it
removes its folder, secret included. A program killed before it could do so leaves the folder
behind once its processes have followed it; :func:`sweep_leftovers` (run by every ``xparl``
command and by the next embedded cluster) removes such folders.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parl.core.files import write_atomic
from parl.remote import protocol as P
from parl.remote.config import (
    Timeouts,
    data_home,
    default_host,
    private_dir,
    python_command,
    writable_data_home,
)
from parl.remote.exceptions import AuthenticationError
from parl.remote.security import (
    SECRET_ENV,
    Mode,
    Security,
    check_secret,
    is_loopback,
    new_secret,
    read_secret_file,
)

import psutil
import zmq

__all__ = [
    "LocalCluster",
    "connected_workers",
    "endpoint_key",
    "find_security",
    "is_alive",
    "query",
    "recorded_clusters",
    "start_worker",
    "stop_process",
    "sweep_leftovers",
]

logger = logging.getLogger("parl.remote.cluster")
_STAGING = ".starting-"


def _record(pid: int) -> dict[str, Any]:
    return {"pid": pid, "create_time": psutil.Process(pid).create_time()}


def is_alive(record: dict[str, Any]) -> bool:
    """Whether the process of a record (pid and start time) still runs: a recycled pid or a
    zombie does not count."""
    try:
        proc = psutil.Process(int(record["pid"]))
        return abs(proc.create_time() - float(record["create_time"])) < 0.05 and (
            proc.status() != psutil.STATUS_ZOMBIE
        )
    except (psutil.Error, KeyError, ValueError, TypeError):
        return False


def stop_process(record: dict[str, Any], timeout: float = 5.0) -> None:
    """SIGTERM a recorded process (only if its start time matches), SIGKILL it after ``timeout``.

    A process counts as gone once it is a zombie: a detached one waits for an init that may
    never reap it.
    """
    if not is_alive(record):
        return
    proc = psutil.Process(int(record["pid"]))
    for end in (proc.terminate, proc.kill):
        with contextlib.suppress(psutil.NoSuchProcess):
            end()
        deadline = time.monotonic() + timeout
        while is_alive(record):
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
        else:
            return


def _wait_file(
    path: Path, proc: subprocess.Popen[bytes], timeout: float, what: str, log: Path
) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            info = json.loads(path.read_text())
            if "error" in info:
                raise RuntimeError(f"{what} failed to start: {info['error']}")
            return info
        if proc.poll() is not None:
            raise RuntimeError(
                f"{what} exited with code {proc.returncode} before it was ready: {_last_line(log)}"
            )
        time.sleep(0.01)
    proc.kill()
    raise RuntimeError(f"{what} was not ready within {timeout:g} s")


def _last_line(log: Path) -> str:
    """The last line a process wrote to its log (what it died of), bounded."""
    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4096))
            lines = handle.read().decode(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    return lines[-1][-500:] if lines else "it wrote nothing"


def _spawn_ready(
    cmd: list[str],
    log_path: Path,
    ready: Path,
    timeouts: Timeouts | None,
    security: Security,
    detach: bool,
    ready_timeout: float,
    what: str,
) -> tuple[subprocess.Popen[bytes], dict]:
    """Start a cluster process logging to ``log_path``, hand it the secret on stdin, and wait
    until it writes ``ready``."""
    proc = _spawn(cmd, log_path, timeouts, security, detach)
    return proc, _wait_file(ready, proc, ready_timeout, what, log_path)


def _spawn(
    cmd: list[str],
    log_path: Path,
    timeouts: Timeouts | None,
    security: Security,
    detach: bool,
    more_stdin: str = "",
) -> subprocess.Popen[bytes]:
    """Start a cluster process logging to ``log_path``; hand it the secret (and ``more_stdin``)
    on stdin."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proc = subprocess.Popen(
            [*cmd, "--mode", security.mode.value],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_child_env(timeouts),
            start_new_session=detach,
        )
    finally:
        os.close(log)
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(f"{security.secret or ''}\n{more_stdin}".encode())
        proc.stdin.close()
    return proc


def _child_env(timeouts: Timeouts | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("XPARL", None)
    env.pop(SECRET_ENV, None)  # the secret goes on stdin, not into every process's environment
    if timeouts is not None:
        env.update(timeouts.as_env())
    return env


def start_worker(
    address: str,
    cpu_num: int,
    data_dir: Path,
    *,
    security: Security,
    gpus: str = "",
    host: str | None = None,
    advertise_host: str | None = None,
    port_range: str | None = None,
    timeouts: Timeouts | None = None,
    ready_timeout: float | None = None,
    detach: bool = False,
    owner_pid: int | None = None,
) -> dict[str, Any]:
    """Start a worker process for the master at ``address`` and wait until it registered.

    ``ready_timeout`` defaults to the worker's ``register_timeout`` plus 30 s to start: the
    worker keeps asking a busy master that long.

    Returns:
        The worker's record: pid, create_time, worker_id, address.
    """
    if ready_timeout is None:
        ready_timeout = (timeouts or Timeouts()).register_timeout + 30.0
    if cpu_num < 0:
        raise ValueError(f"cpu_num={cpu_num} must be >= 0")
    private_dir(data_dir)
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
    if owner_pid is not None:
        cmd += ["--owner-pid", str(owner_pid)]
    try:
        proc, info = _spawn_ready(
            cmd,
            data_dir / "workers.log",
            ready,
            timeouts,
            security,
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
        data_dir: The cluster's folder (``cluster.json``, ``secret``, logs).
        master: Record (pid, create_time) of the master process.
        workers: Records of the local workers.
        security: The cluster's secret and mode.
    """

    address: str
    data_dir: Path
    master: dict[str, Any]
    workers: list[dict[str, Any]] = field(default_factory=list)
    timeouts: Timeouts | None = None
    embedded: bool = False
    security: Security = field(default_factory=lambda: Security(None))
    owner: dict[str, Any] | None = None
    monitor: dict[str, Any] | None = None

    @property
    def owner_pid(self) -> int | None:
        """For an embedded cluster: the pid of the program it belongs to."""
        return None if self.owner is None else int(self.owner["pid"])

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    @property
    def secret_file(self) -> Path:
        return self.data_dir / "secret"

    @property
    def monitor_url(self) -> str | None:
        """The web monitor's URL with its read-only token (None: no monitor)."""
        return None if self.monitor is None else self.monitor.get("url")

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
        mode: Mode = Mode.AUTH,
        secret: str | None = None,
        monitor_port: int | None = None,
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
            mode: ``auth`` (default), ``encrypt``, or ``insecure`` (loopback only).
            secret: The cluster secret. Default: ``PARL_CLUSTER_SECRET``, else the secret kept
                for this port by an earlier cluster (so its workers get back in), else a new one.
            monitor_port: Start the web monitor on this port of ``host`` (0: a free port;
                None: no monitor). It stops when the master does.
        """
        host = host or default_host()
        clusters = private_dir(writable_data_home() / "clusters")
        if mode is Mode.INSECURE:
            security = Security(None)
        else:
            chosen = secret or os.environ.get(SECRET_ENV) or _kept_secret(clusters, port)
            security = Security(
                check_secret(chosen, SECRET_ENV) if chosen else new_secret(),
                encrypt=mode is Mode.ENCRYPT,
            )
        security = security.binding(host)  # encrypted beyond loopback; insecure fails here
        if embedded:
            for line in sweep_leftovers():
                logger.info("%s", line)
        staging = private_dir(clusters / f"{_STAGING}{os.getpid()}-{uuid.uuid4().hex[:6]}")
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
        owner_pid = os.getpid() if embedded else None
        if owner_pid is not None:
            cmd += ["--owner-pid", str(owner_pid)]
        try:
            proc, info = _spawn_ready(
                cmd,
                staging / "master.log",
                ready,
                timeouts,
                security,
                detach,
                ready_timeout,
                f"the master on {host}:{port}",
            )
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        data_dir = _settle(staging, clusters / str(info["port"]))
        kept = _surviving_workers(data_dir, security)
        cluster = cls(
            info["address"],
            data_dir,
            _record(proc.pid),
            kept,
            timeouts,
            embedded,
            security,
            None if owner_pid is None else _record(owner_pid),
        )
        if security.secret is not None:
            write_atomic(cluster.secret_file, security.secret)
        cluster.save()
        try:
            # The monitor starts while the worker does; it is ready long before a warm job.
            monitor = None
            if monitor_port is not None:
                monitor = cluster._launch_monitor(host, monitor_port, detach)
            if cpu_num > 0 or gpus:
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
            if monitor is not None:
                cluster._await_monitor(monitor, advertise_host, ready_timeout)
        except BaseException:
            # The error may point at the logs: the folder stays until the program has ended
            # (then the next embedded cluster or xparl command sweeps it).
            cluster._stop_processes(5.0)
            raise
        return cluster

    def _launch_monitor(
        self, host: str, port: int, detach: bool
    ) -> tuple[subprocess.Popen[bytes], Path]:
        """Start the web monitor (:mod:`parl.remote.monitor`) with a new read-only token and
        record it at once (so a failed start stops it); it ends when the master ends."""
        token = secrets.token_urlsafe(24)
        ready = self.data_dir / f"monitor-{uuid.uuid4().hex[:8]}.ready"
        options = {
            "--master": self.address,
            "--master-pid": self.master["pid"],
            "--host": host,
            "--port": port,
            "--ready-file": ready,
        }
        args = [str(part) for option in options.items() for part in option]
        cmd = [*python_command(), "-m", "parl.remote.monitor", *args]
        log = self.data_dir / "monitor.log"
        proc = _spawn(cmd, log, self.timeouts, self.security, detach, more_stdin=f"{token}\n")
        self.monitor = {**_record(proc.pid), "host": host, "token": token}
        self.save()
        return proc, ready

    def _await_monitor(
        self,
        launched: tuple[subprocess.Popen[bytes], Path],
        advertise_host: str | None,
        ready_timeout: float,
    ) -> None:
        from parl.remote.monitor import monitor_url

        assert self.monitor is not None
        proc, ready = launched
        host = self.monitor["host"]
        try:
            log = self.data_dir / "monitor.log"
            info = _wait_file(ready, proc, ready_timeout, f"the monitor on {host}", log)
        finally:
            ready.unlink(missing_ok=True)
        shown = advertise_host or (socket.gethostname() if host in ("0.0.0.0", "::") else host)
        url = monitor_url(shown, info["port"], self.monitor["token"])
        self.monitor.update(port=info["port"], url=url)
        self.save()

    def add_worker(self, cpu_num: int, **kwargs: Any) -> dict[str, Any]:
        """Start one more local worker for this cluster and record it."""
        record = start_worker(
            self.address,
            cpu_num,
            self.data_dir,
            security=self.security,
            timeouts=self.timeouts,
            owner_pid=self.owner_pid,
            **kwargs,
        )
        self.workers.append(record)
        self.save()
        return record

    def query(self, tag: bytes = P.STATUS, timeout: float = 3.0) -> dict[str, Any]:
        """Ask this cluster's master (``status`` by default)."""
        return query(self.address, tag, timeout=timeout, security=self.security)

    def wait_for_jobs(self, count: int, timeout: float) -> dict[str, Any]:
        """Wait until the cluster has ``count`` warm jobs ready; return the status."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.query(timeout=max(0.5, deadline - time.monotonic()))
            if sum(w["idle_jobs"] for w in status["workers"]) >= count:
                return status
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the cluster at {self.address} had fewer than {count} ready "
                    f"jobs after {timeout:g} s; see the logs in {self.data_dir}"
                )
            time.sleep(0.02)

    def save(self) -> None:
        """Write ``cluster.json`` (owner-only)."""
        record = {
            "address": self.address,
            "security": self.security.mode.value,
            "embedded": self.embedded,
            "owner_pid": self.owner_pid,
            "owner_create_time": None if self.owner is None else self.owner.get("create_time"),
            "master": self.master,
            "workers": self.workers,
            "monitor": self.monitor,
        }
        write_atomic(self.data_dir / "cluster.json", json.dumps(record, indent=1))

    def processes(self) -> list[dict[str, Any]]:
        """Records of the cluster's master, workers and monitor."""
        return [self.master, *self.workers, *([self.monitor] if self.monitor else [])]

    def is_running(self) -> bool:
        """True while the master process runs."""
        return is_alive(self.master)

    def running_workers(self) -> list[dict[str, Any]]:
        """Records of the workers that still run (they outlive a master)."""
        return [w for w in self.workers if is_alive(w)]

    def owner_alive(self) -> bool:
        """For an embedded cluster: whether the program that started it still runs (a record
        without the program's start time, from an older parl-remote, trusts the pid alone)."""
        if self.owner is None:
            return False
        if self.owner.get("create_time") is None:
            return psutil.pid_exists(int(self.owner["pid"]))
        return is_alive(self.owner)

    def any_process_alive(self) -> bool:
        """Whether the master, a worker or the monitor of this cluster still runs."""
        return any(is_alive(record) for record in self.processes())

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the workers (which stop their jobs), then the master; an embedded cluster
        then removes its folder (records, secret and logs): it belonged to one program run."""
        self._stop_processes(timeout)
        if self.embedded:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def _stop_processes(self, timeout: float) -> None:
        for record in self.workers:
            stop_process(record, timeout)
        if self.monitor is not None:
            stop_process(self.monitor, timeout)
        stop_process(self.master, timeout)
        for record in self.processes():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(record["pid"]), os.WNOHANG)

    @classmethod
    def load(cls, data_dir: Path) -> LocalCluster:
        """Read a cluster's record (and secret) from its folder."""
        record = json.loads((data_dir / "cluster.json").read_text())
        mode = Mode(record.get("security", Mode.AUTH.value))
        secret = None
        if mode is not Mode.INSECURE:
            secret = read_secret_file(data_dir / "secret")
        owner = None
        if record.get("embedded") and record.get("owner_pid") is not None:
            owner = {"pid": record["owner_pid"], "create_time": record.get("owner_create_time")}
        return cls(
            record["address"],
            data_dir,
            record["master"],
            record["workers"],
            None,
            record.get("embedded", False),
            Security.for_mode(mode, secret),
            owner,
            record.get("monitor"),
        )


def _kept_secret(clusters: Path, port: int) -> str | None:
    """The secret of an earlier cluster on ``port`` (0: none)."""
    if not port:
        return None
    try:
        return read_secret_file(clusters / str(port) / "secret")
    except ValueError:
        return None


def _settle(staging: Path, data_dir: Path) -> Path:
    """Move a new master's staging folder to the cluster's folder, keeping what was there."""
    (staging / "master.ready").unlink(missing_ok=True)
    if not data_dir.exists():
        staging.rename(data_dir)
        return data_dir
    with open(data_dir / "master.log", "ab") as log:
        log.write((staging / "master.log").read_bytes())
    shutil.rmtree(staging, ignore_errors=True)
    return data_dir


def _surviving_workers(data_dir: Path, security: Security) -> list[dict[str, Any]]:
    """Workers of an earlier cluster on this port that still run: kept in the record if they
    share the secret (they register again), stopped otherwise (they never could)."""
    record_file = data_dir / "cluster.json"
    if not record_file.is_file():
        return []
    try:
        old = LocalCluster.load(data_dir)
    except (OSError, ValueError, KeyError):
        return []
    alive = old.running_workers()
    if old.security.secret == security.secret and old.security.mode == security.mode:
        return alive
    for record in alive:
        stop_process(record)
    return []


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


def sweep_leftovers() -> list[str]:
    """Remove what ended programs left under ``$XPARL_HOME/clusters`` and say what went.

    Two kinds of folder go: an embedded cluster's whose program has ended and whose master,
    workers and monitor have all stopped (the program was killed, so it could not remove the
    folder itself), and a start-up folder whose program ended while starting a cluster. The
    folders of ``xparl start`` clusters stay (their secret lets a restarted master take its
    workers back), and so does anything still in use.

    Returns:
        One line per removed folder: which, and why.
    """
    root = data_home() / "clusters"
    if not root.is_dir():
        return []
    removed = []
    for folder in sorted(root.iterdir()):
        why = _leftover(folder)
        if why is not None:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"removed {folder}: {why}")
    return removed


def _leftover(folder: Path) -> str | None:
    """Why ``folder`` is a leftover of an ended program (None: it is not)."""
    if folder.name.startswith(_STAGING):
        pid = folder.name[len(_STAGING) :].split("-")[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            return f"the program with pid {pid} ended while it was starting a cluster"
        return None
    if not (folder / "cluster.json").is_file():
        return None
    try:
        cluster = LocalCluster.load(folder)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not cluster.embedded or cluster.owner_alive() or cluster.any_process_alive():
        return None
    return (
        f"the embedded cluster of the program with pid {cluster.owner_pid}, which ended "
        "without stopping it (its processes have stopped too)"
    )


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


def find_security(
    address: str, secret_file: str | os.PathLike[str] | None = None, insecure: bool = False
) -> Security:
    """The secret to reach the cluster at ``address``, without set-up where possible.

    In order: ``secret_file``; ``PARL_CLUSTER_SECRET``; the owner-only record of a cluster this
    account started on this machine at that address (any loopback name of its port counts:
    ``localhost``, ``127.0.0.1``, ``[::1]``). Finding none is an error, never a fallback to no
    authentication: only ``insecure=True`` connects without a secret.

    Raises:
        AuthenticationError: No secret was found (the message says where it was looked for),
            or the recorded cluster runs with ``--insecure`` and ``insecure`` was not asked.
        ValueError: ``insecure`` together with ``secret_file``, or a bad secret file or value.
    """
    if insecure:
        if secret_file is not None:
            raise ValueError("insecure=True and a secret file exclude each other; pick one")
        return Security(None)
    if secret_file is not None:
        return Security(read_secret_file(secret_file))
    env = os.environ.get(SECRET_ENV)
    if env:
        return Security(check_secret(env, SECRET_ENV))
    for cluster in recorded_clusters():
        if _same_endpoint(cluster.address, address):
            if cluster.security.secret is None:
                raise AuthenticationError(
                    f"the cluster at {address} (recorded in {cluster.data_dir}) runs without "
                    "authentication (--insecure); connect to it only on purpose: "
                    "parl.connect(..., insecure=True), or --insecure for xparl commands"
                )
            return cluster.security
    raise AuthenticationError(
        f"no cluster secret for {address}: looked for a secret file (secret_file= or "
        f"--secret-file: not given), the environment variable {SECRET_ENV} (not set) and a "
        f"cluster recorded at that address under {data_home() / 'clusters'} (none; "
        "`xparl stop` removes a cluster's record). Copy the `secret` file from the folder "
        "`xparl start` printed and pass secret_file=FILE (--secret-file FILE) or set "
        f"{SECRET_ENV}; only for a cluster started with --insecure, pass insecure=True "
        "(--insecure)."
    )


def endpoint_key(address: str) -> tuple[str, str]:
    """``(host, port)`` of ``address``, with every loopback name (``localhost``, ``127.x.y.z``,
    ``[::1]``) as the one host ``loopback``."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]").lower()
    return ("loopback" if is_loopback(host) else host, port)


def _same_endpoint(recorded: str, asked: str) -> bool:
    """Whether the cluster recorded at ``recorded`` is the one ``asked`` names: the same
    address, or its port on a loopback name. (Records are kept per port; a wrong guess only
    fails the CURVE handshake, it never lowers security.)"""
    asked_host, asked_port = endpoint_key(asked)
    if asked_host == "loopback":
        return endpoint_key(recorded)[1] == asked_port
    return endpoint_key(recorded) == (asked_host, asked_port)


def query(
    address: str,
    tag: bytes,
    payload: dict[str, Any] | None = None,
    timeout: float = 3.0,
    security: Security | None = None,
) -> dict[str, Any]:
    """Send one control message to a master or worker and return its JSON answer.

    Raises:
        AuthenticationError: The master refused this process's secret (or lack of one).
        ConnectionError: Nothing answered within ``timeout``.
    """
    if security is None:
        security = find_security(address)
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    label = f"{address} refused this process"
    sock, watch = P.dial(context, address, security, label, _Quiet(), P.STATUS_MAX_BYTES)
    try:
        request = [tag, P.encode(payload or {})]
        return P.ask(sock, watch, request, timeout, P.STATUS_MAX_BYTES)[1]
    except P.NoAnswer as exc:
        if exc.problem is None:
            raise ConnectionError(f"nothing answered at {address} within {timeout:g} s") from None
        raise AuthenticationError(
            f"{address} refused this process: {exc.problem}. Pass the cluster's secret "
            f"(--secret-file FILE or {SECRET_ENV})"
        ) from None
    finally:
        watch.close(sock)
        sock.close()


class _Quiet:
    """A tool reports refusals as errors, not log lines."""

    def warning(self, *args: Any) -> None:
        pass
