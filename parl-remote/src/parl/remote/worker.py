"""The xparl worker: one per machine. It keeps a warm pool of job processes (one actor each),
registers them with the master, replaces each job when it exits, and serves actor logs.

Run as ``python -m parl.remote.worker --address HOST:PORT --cpu_num N``; ``xparl start``,
``xparl connect`` and ``parl.connect()`` do that.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from parl.remote import protocol as P
from parl.remote.config import Timeouts, default_host, python_command

import zmq

logger = logging.getLogger("parl.remote.worker")

_MAX_EARLY_FAILURES = 5


class Worker:
    """A pool of ``cpu_num + len(gpus)`` warm job processes registered with one master.

    Args:
        master_address: ``host:port`` of the master.
        cpu_num: CPUs this worker offers.
        gpus: GPU ids this worker offers (strings such as ``"0"``).
        host: Host to bind the worker's and its jobs' sockets.
        data_dir: Folder for the logs and files of this worker's jobs.
        timeouts: Heartbeat timeouts.
        advertise_host: Host others dial to reach this worker and its jobs.
        port_range: ``LOW-HIGH`` range for the ports of this worker and its jobs.
    """

    def __init__(
        self,
        master_address: str,
        cpu_num: int,
        gpus: list[str],
        host: str,
        data_dir: Path,
        timeouts: Timeouts,
        advertise_host: str | None = None,
        port_range: str | None = None,
    ) -> None:
        self.worker_id = uuid.uuid4().hex[:8]
        self.master_address = master_address
        self.cpu_num = cpu_num
        self.gpus = gpus
        self.host = host
        self.advertise_host = advertise_host or host
        self.port_range = port_range
        self.timeouts = timeouts
        self.log_dir = data_dir / "workers" / self.worker_id / "logs"
        self.files_dir = data_dir / "workers" / self.worker_id / "files"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.files_dir.mkdir(parents=True, exist_ok=True)
        self.context = zmq.Context()
        self.master = self.context.socket(zmq.DEALER)
        self.master.linger = 500
        self.master.identity = f"worker-{self.worker_id}".encode()
        self.master.connect(f"tcp://{master_address}")
        self.jobs_socket = self.context.socket(zmq.ROUTER)
        self.jobs_socket.linger = 0
        port = P.bind_socket(self.jobs_socket, host, port_range)
        self.address = f"{self.advertise_host}:{port}"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ready: set[str] = set()
        self.reasons: dict[str, dict[str, str]] = {}
        self.counter = 0
        self.early_failures = 0
        self.running = True
        self.last_ack = time.monotonic()

    def register(self) -> None:
        """Register with the master; raise RuntimeError with the master's reason on refusal."""
        self._to_master(
            P.REGISTER_WORKER,
            {
                **P.identity(),
                "worker_id": self.worker_id,
                "host": self.advertise_host,
                "address": self.address,
                "cpu_num": self.cpu_num,
                "gpus": self.gpus,
                "log_dir": str(self.log_dir),
            },
        )
        if not self.master.poll(int(self.timeouts.connect_timeout * 1000)):
            raise RuntimeError(
                f"no xparl master answered at {self.master_address} within "
                f"{self.timeouts.connect_timeout} s; check the address, or start a master with "
                "`xparl start --port PORT`"
            )
        tag, body = self.master.recv_multipart()
        if tag != P.ACK:
            raise RuntimeError(f"the master refused this worker: {P.decode(body).get('message')}")
        self.last_ack = time.monotonic()

    def _to_master(self, tag: bytes, payload: dict[str, Any]) -> None:
        self.master.send_multipart([tag, P.encode({"worker_id": self.worker_id, **payload})])

    # ------------------------------------------------------------------ jobs
    def _spawn(self) -> None:
        self.counter += 1
        job_id = f"{self.worker_id}-{self.counter:04d}"
        files = self.files_dir / job_id
        files.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(XPARL="True", CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1", XPARL_JOB_ID=job_id)
        if self.port_range:
            env["XPARL_PORT_RANGE"] = self.port_range
        with open(self.log_dir / f"{job_id}.log", "ab") as log:
            self.procs[job_id] = subprocess.Popen(
                [
                    *python_command(),
                    "-m",
                    "parl.remote.job",
                    "--worker",
                    self.jobs_endpoint,
                    "--job-id",
                    job_id,
                    "--host",
                    self.host,
                    "--advertise-host",
                    self.advertise_host,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=files,
                env=env,
                close_fds=True,
            )

    @property
    def jobs_endpoint(self) -> str:
        return f"tcp://{self.address}"

    def _reap(self) -> None:
        for job_id, proc in list(self.procs.items()):
            code = proc.poll()
            if code is None:
                continue
            del self.procs[job_id]
            was_ready = job_id in self.ready
            self.ready.discard(job_id)
            reason = self.reasons.pop(job_id, None)
            if reason is None:
                if code == 0:
                    reason = {"reason": "released", "message": "released by its client"}
                else:
                    reason = {
                        "reason": "exited",
                        "message": f"the actor's process (job {job_id}, pid {proc.pid}) on "
                        f"{socket.gethostname()} died ({_exit_text(code)}); its log: "
                        f"`xparl logs {job_id}`. Create a new actor to go on.",
                    }
            self._to_master(P.JOB_EXITED, {"job_id": job_id, "returncode": code, **reason})
            shutil.rmtree(self.files_dir / job_id, ignore_errors=True)
            if not was_ready:
                self.early_failures += 1
                if self.early_failures >= _MAX_EARLY_FAILURES:
                    logger.error(
                        "%d job processes died before becoming ready; see %s. Stopping.",
                        self.early_failures,
                        self.log_dir,
                    )
                    self.running = False
                    return
            if self.running:
                self._spawn()

    def _on_job_message(self, frames: list[bytes]) -> None:
        identity, tag = frames[0], frames[1]
        payload = P.decode(frames[2]) if len(frames) > 2 else {}
        if tag == P.JOB_READY:
            job_id = str(payload["job_id"])
            if job_id in self.procs:
                self.ready.add(job_id)
                self.early_failures = 0
                self._to_master(P.JOB_READY, payload)
        elif tag == P.JOB_EXITED:
            self.reasons[str(payload["job_id"])] = {
                "reason": str(payload.get("reason")),
                "message": str(payload.get("message")),
            }
        elif tag == P.READ_LOG:
            answer = self._read_log(payload)
            self.jobs_socket.send_multipart([identity, P.READ_LOG, P.encode(answer)])

    def _read_log(self, payload: dict[str, Any]) -> dict[str, Any]:
        job_id = str(payload.get("job_id", ""))
        path = self.log_dir / f"{job_id}.log"
        if "/" in job_id or not path.is_file():
            return {"found": False, "worker_id": self.worker_id}
        lines = int(payload.get("lines", 0))
        text = path.read_text(errors="replace")
        if lines > 0:
            text = "\n".join(text.splitlines()[-lines:])
        return {"found": True, "worker_id": self.worker_id, "path": str(path), "log": text}

    def _kill(self, job_id: str) -> None:
        proc = self.procs.get(job_id)
        if proc is not None and proc.poll() is None:
            proc.kill()

    # ------------------------------------------------------------------ main loop
    def serve(self) -> None:
        """Keep the pool full and the master informed until stopped or the master is lost."""
        for _ in range(self.cpu_num + len(self.gpus)):
            self._spawn()
        poller = zmq.Poller()
        poller.register(self.master, zmq.POLLIN)
        poller.register(self.jobs_socket, zmq.POLLIN)
        last_beat = 0.0
        last_loop = time.monotonic()
        while self.running:
            events = dict(poller.poll(50))
            if self.jobs_socket in events:
                self._drain(self.jobs_socket, self._on_job_message)
            if self.master in events:
                self._drain(self.master, self._on_master_message)
            self._reap()
            now = time.monotonic()
            if now - last_loop > self.timeouts.heartbeat_timeout / 2:
                self.last_ack = now  # this process was stalled: give the master a new window
            last_loop = now
            if now - last_beat >= self.timeouts.heartbeat_interval:
                self._to_master(P.WORKER_HEARTBEAT, {"jobs": len(self.procs)})
                last_beat = now
            if now - self.last_ack > self.timeouts.heartbeat_timeout:
                logger.error(
                    "lost the master at %s (no answer for %.1f s); stopping",
                    self.master_address,
                    now - self.last_ack,
                )
                self.running = False
        self.shutdown()

    def _drain(self, sock: zmq.Socket, handler: Any) -> None:
        while True:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                handler(frames)
            except Exception as exc:
                logger.warning("ignored a malformed message (%s: %s)", type(exc).__name__, exc)

    def _on_master_message(self, frames: list[bytes]) -> None:
        tag = frames[0]
        payload = P.decode(frames[1]) if len(frames) > 1 else {}
        self.last_ack = time.monotonic()
        if tag == P.KILL_JOB:
            self._kill(str(payload["job_id"]))
        elif tag == P.SHUTDOWN:
            self.running = False
        elif tag == P.ERROR:
            logger.error("the master dropped this worker: %s", payload.get("message"))
            self.running = False

    def shutdown(self) -> None:
        """Kill every job, then close the sockets."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs.values():
            proc.wait()
        shutil.rmtree(self.files_dir, ignore_errors=True)
        self.master.close(linger=200)
        self.jobs_socket.close()
        self.context.term()


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the worker process."""
    parser = argparse.ArgumentParser(prog="python -m parl.remote.worker")
    parser.add_argument("--address", required=True)
    parser.add_argument("--cpu_num", type=int, required=True)
    parser.add_argument("--gpu", default="")
    parser.add_argument("--host", default=default_host())
    parser.add_argument("--advertise-host", default=None)
    parser.add_argument("--port-range", default=None)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--ready-file", default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s worker %(levelname)s %(message)s"
    )
    gpus = [g.strip() for g in args.gpu.split(",") if g.strip()]
    worker = Worker(
        args.address,
        args.cpu_num,
        gpus,
        args.host,
        Path(args.data_dir),
        Timeouts(),
        args.advertise_host,
        args.port_range,
    )

    def stop(signum: int, frame: Any) -> None:
        worker.running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        worker.register()
    except RuntimeError as exc:
        logger.error("%s", exc)
        if args.ready_file:
            Path(args.ready_file).write_text(json.dumps({"error": str(exc)}))
        worker.shutdown()
        sys.exit(2)
    if args.ready_file:
        tmp = Path(args.ready_file + ".tmp")
        tmp.write_text(
            json.dumps(
                {"pid": os.getpid(), "worker_id": worker.worker_id, "address": worker.address}
            )
        )
        tmp.replace(args.ready_file)
    logger.info(
        "worker %s serving %s with %d CPUs, GPUs %s",
        worker.worker_id,
        args.address,
        args.cpu_num,
        gpus,
    )
    worker.serve()


if __name__ == "__main__":
    main()
