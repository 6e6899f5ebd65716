"""The xparl worker: one per machine. It keeps a warm pool of job processes (one actor each),
reports them to the master, replaces each job when it exits, and serves actor logs.

A worker outlives its master: when the master stalls, restarts or the network drops, the worker
keeps its actors serving their clients (they talk to the jobs directly), redials, and registers
again with everything it still runs, so a restarted master rebuilds its books from the workers.
It registers with its whole state and then reports each change (a job ready, claimed or
exited) as a numbered delta; a heartbeat carries only the number of the latest change, so a
master that missed one asks for the whole state again and a lost message stays harmless.

Run as ``python -m parl.remote.worker --address HOST:PORT --cpu_num N`` with the cluster secret
on stdin; ``xparl start``, ``xparl connect`` and ``parl.connect()`` do that.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from parl.core.files import write_atomic
from parl.remote import logs
from parl.remote import protocol as P
from parl.remote.config import Limits, Timeouts, default_host, private_dir, python_command
from parl.remote.pace import MAX_PACE_S, lost_after
from parl.remote.processes import has_exited, kill_group, process_exists, raise_fd_limit
from parl.remote.security import SECRET_ENV, Mode, Security

import psutil
import zmq

logger = logging.getLogger("parl.remote.worker")

_MAX_EARLY_FAILURES = 5
_ROTATE_EVERY_S = 1.0
_JOB_ID = re.compile(r"^[0-9a-f]{8}-[0-9]{4,}$")
_KEEP_ENDED = 50  # ended actors a worker remembers for the monitor
_MACHINE_EVERY_S = 5.0  # how often a heartbeat carries the host's memory and load


class Worker:
    """A pool of ``cpu_num + len(gpus)`` warm job processes registered with one master.

    Args:
        master_address: ``host:port`` of the master.
        cpu_num: CPUs this worker offers.
        gpus: GPU ids this worker offers (strings such as ``"0"``).
        host: Host to bind the worker's and its jobs' sockets.
        data_dir: Folder for the logs and files of this worker's jobs.
        timeouts: Heartbeat timeouts.
        security: The cluster's security (secret and mode).
        limits: Message and log size bounds.
        advertise_host: Host others dial to reach this worker and its jobs.
        port_range: ``LOW-HIGH`` range for the ports of this worker and its jobs.
        owner_pid: Stop when this process exits (the embedded cluster of a script).
    """

    def __init__(
        self,
        master_address: str,
        cpu_num: int,
        gpus: list[str],
        host: str,
        data_dir: Path,
        timeouts: Timeouts,
        security: Security,
        limits: Limits,
        advertise_host: str | None = None,
        port_range: str | None = None,
        owner_pid: int | None = None,
    ) -> None:
        self.worker_id = uuid.uuid4().hex[:8]
        self.token = secrets.token_hex(16)  # proves later messages come from this worker
        self.change = 0  # the number of this worker's latest change of state
        self.link = 0  # how often this worker dialled its master: the master answers the newest
        self.master_address = master_address
        self.cpu_num = cpu_num
        self.gpus = gpus
        self.host = host
        self.advertise_host = advertise_host or host
        self.port_range = port_range
        self.timeouts = timeouts
        self.limits = limits
        self.owner_pid = owner_pid
        self.security = security
        self.job_security = security.binding(host)
        self.user_umask = os.umask(0o077)  # this process writes owner-only files; jobs do not
        self.log_dir = private_dir(data_dir / "workers" / self.worker_id / "logs")
        self.files_dir = private_dir(data_dir / "workers" / self.worker_id / "files")
        self.context = zmq.Context()
        self.gatekeeper = self.job_security.start_gatekeeper(self.context)
        self.jobs_socket = self.context.socket(zmq.ROUTER)
        self.jobs_socket.linger = 0
        P.bound_inbound(self.jobs_socket, P.CONTROL_MAX_BYTES)
        self.job_security.serve_control(self.jobs_socket)
        port = P.bind_socket(self.jobs_socket, host, port_range)
        self.jobs_watch = P.Watch(
            self.jobs_socket, 0, "the worker refused a connection", logger, bound=True
        )
        self.address = f"{self.advertise_host}:{port}"
        self.master, self.master_watch = self._dial_master()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ready: dict[str, dict[str, Any]] = {}
        self.claimed: dict[str, dict[str, Any]] = {}
        self.reasons: dict[str, dict[str, str]] = {}
        # For the monitor: what each actor is, its last error, and the actors that ended.
        self.actors: dict[str, dict[str, Any]] = {}
        self.ended: deque[dict[str, Any]] = deque(maxlen=_KEEP_ENDED)
        self.usage: dict[str, psutil.Process] = {}
        self.host_facts = _Host()
        self.counter = 0
        self.early_failures = 0
        self.bad_messages = 0
        self.failures = 0  # of messages and duties that raised: logged, never fatal
        self.running = True
        self.last_ack = time.monotonic()
        self.beat_every = timeouts.heartbeat_interval  # the master slows it in a large cluster
        self.master_lost = False
        self.last_register = 0.0
        self.redials = 0  # in a row, while the master stays silent
        self.next_redial = 0.0
        self.last_state_sent = 0.0
        self.last_machine = 0.0
        self.reported_counts = (0, 0)  # bad messages and refused connections the master knows

    # ------------------------------------------------------------------ master link
    def _dial_master(self) -> tuple[zmq.Socket, P.Watch]:
        label = f"the master at {self.master_address} refused this worker"
        return P.dial(self.context, self.master_address, self.security, label, logger)

    def _redial(self) -> None:
        """Replace the master socket: a link silent this long may be broken, not just slow."""
        self.master_watch.close(self.master)
        self.master.close(linger=0)
        self.master, self.master_watch = self._dial_master()
        self.link += 1

    def _message(self, payload: dict[str, Any]) -> bytes:
        return P.encode(
            {"worker_id": self.worker_id, "token": self.token, "link": self.link, **payload}
        )

    def _to_master(self, tag: bytes, payload: dict[str, Any]) -> None:
        with contextlib.suppress(zmq.Again):
            self.master.send_multipart([tag, self._message(payload)], zmq.NOBLOCK)

    def _report_change(self, tag: bytes, payload: dict[str, Any]) -> None:
        """Tell the master one change of this worker's state, numbered so it sees a gap."""
        self.change += 1
        self._to_master(tag, {**payload, "change": self.change})

    def _registration(self) -> dict[str, Any]:
        return {
            **P.identity(),
            "host": self.advertise_host,
            "address": self.address,
            "cpu_num": self.cpu_num,
            "gpus": self.gpus,
            "log_dir": str(self.log_dir),
            "jobs": self._state(),
            "change": self.change,
        }

    def register(self) -> None:
        """Register with the master, asking again while it does not answer (a master busy with
        thousands of registrations, or not started yet) for ``register_timeout`` seconds in
        all; raise RuntimeError with the reason on refusal or when no master answered.

        An answer to an earlier attempt that arrives later is an ACK the serve loop takes.
        """
        waits = self.timeouts.register_waits()
        for attempt, wait in enumerate(waits, 1):
            request = [P.REGISTER_WORKER, self._message(self._registration())]
            try:
                tag, reply = P.ask(self.master, self.master_watch, request, wait)
                break
            except P.NoAnswer as exc:
                if exc.problem is not None:
                    raise RuntimeError(
                        f"the master at {self.master_address} refused this worker: "
                        f"{exc.problem}. Give the worker the cluster's secret (--secret-file "
                        f"FILE or {SECRET_ENV}), or match --insecure on both sides."
                    ) from None
                if attempt < len(waits):
                    logger.info(
                        "no answer from the master at %s within %g s; asking again",
                        self.master_address,
                        wait,
                    )
        else:
            raise RuntimeError(
                f"no xparl master answered at {self.master_address} within "
                f"{self.timeouts.register_timeout:g} s ({len(waits)} attempts); check the "
                "address, or start a master with `xparl start --port PORT` "
                "(XPARL_REGISTER_TIMEOUT sets how long a worker keeps asking)"
            )
        if tag != P.ACK:
            raise RuntimeError(f"the master refused this worker: {reply.get('message')}")
        self._accept_registration(reply)

    def _accept_registration(self, reply: dict[str, Any]) -> None:
        if reply.get("mode") == Mode.ENCRYPT.value and self.job_security.secret is not None:
            self.job_security = Security(self.job_security.secret, encrypt=True)
        self.last_ack = time.monotonic()
        self._follow_pace(reply)

    def _state(self) -> dict[str, list[dict[str, Any]]]:
        """Every job this worker runs: the warm ones and the ones hosting an actor."""
        busy = [
            {**self.ready.get(job_id, {"job_id": job_id}), **claim}
            for job_id, claim in self.claimed.items()
        ]
        warm = [info for job_id, info in self.ready.items() if job_id not in self.claimed]
        return {"ready": warm, "busy": busy}

    # ------------------------------------------------------------------ jobs
    def _spawn(self) -> None:
        self.counter += 1
        job_id = f"{self.worker_id}-{self.counter:04d}"
        files = private_dir(self.files_dir / job_id)
        env = dict(os.environ)
        env.pop(SECRET_ENV, None)  # the secret reaches the job on stdin, not in its environment
        env.update(XPARL="True", CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1", XPARL_JOB_ID=job_id)
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # shipped modules leave no (world-readable) .pyc
        if self.port_range:
            env["XPARL_PORT_RANGE"] = self.port_range
        try:
            proc = self._start_job(job_id, files, env)
        except OSError:  # out of descriptors or processes: the next turn tries again
            shutil.rmtree(files, ignore_errors=True)
            (self.log_dir / f"{job_id}.log").unlink(missing_ok=True)
            raise
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(f"{self.job_security.secret or ''}\n".encode())
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        self.procs[job_id] = proc

    def _start_job(self, job_id: str, files: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = os.open(self.log_dir / f"{job_id}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            return subprocess.Popen(
                [
                    *python_command(),
                    "-m",
                    "parl.remote.job",
                    "--worker",
                    f"tcp://{self.address}",
                    "--job-id",
                    job_id,
                    "--host",
                    self.host,
                    "--advertise-host",
                    self.advertise_host,
                    "--worker-pid",
                    str(os.getpid()),
                    "--mode",
                    self.job_security.mode.value,
                ],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=files,
                env=env,
                close_fds=True,
                start_new_session=True,  # the actor's processes share the job's group
                umask=self.user_umask,
            )
        finally:
            os.close(log)

    def _reap(self) -> None:
        for job_id, proc in list(self.procs.items()):
            if not has_exited(proc):
                continue
            kill_group(proc.pid)  # the leader is gone: end what the actor started, too
            code = proc.wait()
            del self.procs[job_id]
            was_ready = job_id in self.ready
            self.ready.pop(job_id, None)
            self.claimed.pop(job_id, None)
            reason = self.reasons.pop(job_id, None) or _exit_reason(job_id, proc.pid, code)
            self._report_change(P.JOB_EXITED, {"job_id": job_id, "returncode": code, **reason})
            self._remember_end(job_id, proc.pid, code, reason)
            shutil.rmtree(self.files_dir / job_id, ignore_errors=True)
            logs.prune(self.log_dir, self.limits.keep_logs, set(self.procs))
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

    def _refill(self) -> None:
        """Start jobs until the pool is full (after a failed start, again on the next turn)."""
        while self.running and len(self.procs) < self.cpu_num + len(self.gpus):
            self._spawn()

    def _rotate_logs(self) -> None:
        for job_id in self.procs:
            if logs.rotate_if_large(self.log_dir / f"{job_id}.log", self.limits.log_max_bytes):
                logger.info("rotated the log of job %s", job_id)

    def _on_job_message(self, frames: list[bytes]) -> None:
        if len(frames) != 3:
            raise P.BadMessage("a job message has a tag and one JSON frame")
        identity, tag, body = frames
        payload = P.decode(body)
        if tag == P.READ_LOG:
            self._send_job(identity, P.READ_LOG, self._read_log(payload))
            return
        if tag == P.INSPECT:
            self._send_job(identity, P.INSPECT, self.inspect())
            return
        job_id = P.text(payload, "job_id", max_len=64)
        if tag == P.JOB_ERROR:
            self._record_error(job_id, payload)
            return
        if job_id not in self.procs:
            if not self._ended_here(job_id):
                raise P.BadMessage(f"no job {job_id!r} on this worker")
            logger.debug("a late message from job %s, which ended", job_id)
            return
        if tag == P.JOB_READY:
            self.ready[job_id] = {
                "job_id": job_id,
                "address": P.text(payload, "address"),
                "pid": P.integer(payload, "pid", 1, 1 << 31),
                "mechanism": P.text(payload, "mechanism", max_len=8),
                "max_message_bytes": P.integer(payload, "max_message_bytes", 1, 1 << 62),
            }
            self.early_failures = 0
            self._report_change(P.JOB_READY, self.ready[job_id])
        elif tag == P.JOB_CLAIMED:
            if job_id not in self.ready:
                raise P.BadMessage(f"job {job_id!r} claimed before it was ready")
            claim = {
                "client_id": P.text(payload, "client_id", max_len=64),
                "gpus": P.items(payload, "gpus", str, 64),
            }
            self.claimed[job_id] = claim
            self.actors[job_id] = {
                "class_name": P.text(payload, "class_name", "", max_len=256),
                "client_id": claim["client_id"],
                "since": time.time(),
                "error": None,
            }
            self._usage(job_id, self.procs[job_id])  # the first look starts the CPU clock
            class_name = self.actors[job_id]["class_name"]
            self._report_change(
                P.JOB_CLAIMED, {**self.ready[job_id], **claim, "class_name": class_name}
            )
        elif tag == P.JOB_EXITED:
            self.reasons[job_id] = {
                "reason": P.text(payload, "reason", max_len=32),
                "message": P.text(payload, "message", max_len=4096),
            }
        else:
            raise P.BadMessage(f"unknown job message {tag[:32]!r}")

    def _ended_here(self, job_id: str) -> bool:
        """True if this worker started ``job_id`` and it has ended: a message the job sent
        just before its end (a claim as it was killed) may be read after its end."""
        prefix, _, number = job_id.rpartition("-")
        return (
            prefix == self.worker_id
            and number.isdigit()
            and int(number) <= self.counter
            and job_id not in self.procs
        )

    def _send_job(self, identity: bytes, tag: bytes, payload: dict[str, Any]) -> None:
        with contextlib.suppress(zmq.ZMQError):
            self.jobs_socket.send_multipart([identity, tag, P.encode(payload)], zmq.NOBLOCK)

    def _read_log(self, payload: dict[str, Any]) -> dict[str, Any]:
        job_id = P.text(payload, "job_id", max_len=64)
        lines = P.integer(payload, "lines", 0, 1 << 30, default=0)
        path = self.log_dir / f"{job_id}.log"
        if not _JOB_ID.match(job_id) or not path.is_file():
            return {"found": False, "worker_id": self.worker_id}
        text, cut = logs.tail(path, lines)
        return {
            "found": True,
            "worker_id": self.worker_id,
            "path": str(path),
            "log": text,
            "truncated": cut,
        }

    def _record_error(self, job_id: str, payload: dict[str, Any]) -> None:
        """Keep an actor's last error; it may arrive after its process was seen to exit (a
        constructor that raised), so an actor that just ended gets it too."""
        error = {
            "type": P.text(payload, "type", max_len=512),
            "message": P.text(payload, "message", max_len=4096),
            "traceback": P.text(payload, "traceback", max_len=16 * 2**10),
            "at": time.time(),
        }
        actor = self.actors.get(job_id) or next(
            (e for e in self.ended if e["job_id"] == job_id), None
        )
        if actor is None:
            raise P.BadMessage(f"no actor {job_id!r} on this worker")
        actor["error"] = error

    def _remember_end(self, job_id: str, pid: int, code: int, reason: dict[str, str]) -> None:
        """Keep what the monitor shows of an actor that ended (warm jobs are not actors)."""
        self.usage.pop(job_id, None)
        actor = self.actors.pop(job_id, None)
        if actor is None:
            return
        self.ended.append(
            {
                **actor,
                "job_id": job_id,
                "pid": pid,
                "returncode": code,
                "reason": reason.get("reason", "exited"),
                "message": reason.get("message", ""),
                "ended": time.time(),
            }
        )

    def inspect(self) -> dict[str, Any]:
        """This worker's host (memory, load) and actors (class, CPU, memory, last error), and
        the actors that ended lately: what the monitor and ``xparl status`` show."""
        live = []
        for job_id, actor in self.actors.items():
            proc = self.procs.get(job_id)
            if proc is None:
                continue
            live.append({**actor, "job_id": job_id, "pid": proc.pid, **self._usage(job_id, proc)})
        return {
            "worker_id": self.worker_id,
            "hostname": socket.gethostname(),
            **self.host_facts.facts(),
            "actors": live,
            "ended": list(self.ended),
        }

    def _usage(self, job_id: str, proc: subprocess.Popen[bytes]) -> dict[str, float]:
        """CPU percent (since the previous look) and resident memory of an actor's process."""
        try:
            ps = self.usage.get(job_id)
            if ps is None:
                ps = self.usage[job_id] = psutil.Process(proc.pid)
            with ps.oneshot():
                return {"cpu_percent": ps.cpu_percent(None), "rss": ps.memory_info().rss}
        except (psutil.Error, OSError):  # gone, or no descriptor left to look
            return {"cpu_percent": 0.0, "rss": 0}

    def _kill(self, job_id: str) -> None:
        proc = self.procs.get(job_id)
        if proc is not None and proc.returncode is None:
            kill_group(proc.pid)

    # ------------------------------------------------------------------ main loop
    def serve(self) -> None:
        """Keep the pool full and the master informed until stopped. An error of one duty
        (descriptors exhausted by a stranger's connections, say) is logged and counted, and
        the loop goes on."""
        self._safely(self._refill)
        last_beat = last_rotate = 0.0
        last_loop = time.monotonic()
        while self.running:
            poller = zmq.Poller()
            for sock in (self.master, self.jobs_socket, self.jobs_watch.socket):
                poller.register(sock, zmq.POLLIN)
            poller.register(self.master_watch.socket, zmq.POLLIN)
            events = dict(poller.poll(50))
            if self.jobs_socket in events:
                self._drain(self.jobs_socket, 3, self._on_job_message)
            if self.master in events:
                self._drain(self.master, 2, self._on_master_message)
            self.jobs_watch.drain()
            self.master_watch.drain()
            self._safely(self._reap)
            self._safely(self._refill)
            now = time.monotonic()
            if now - last_loop > self.timeouts.heartbeat_timeout / 2:
                self.last_ack = now  # this process was stalled: give the master a new window
            last_loop = now
            if now - last_beat >= self.beat_every:
                self._safely(self._heartbeat)
                last_beat = now
            if now - last_rotate >= _ROTATE_EVERY_S:
                self._safely(self._rotate_logs)
                last_rotate = now
            self._watch_master(now)
            if self.owner_pid is not None and not process_exists(self.owner_pid):
                logger.warning("the process %d that owns this worker exited", self.owner_pid)
                self.running = False
        self.shutdown()

    def _heartbeat(self, whole_state: bool = False) -> None:
        """Say this worker lives and the number of its latest change; counters and the host's
        memory and load only when they changed or are due, the whole state when asked."""
        beat: dict[str, Any] = {"change": self.change, "sent": time.time()}
        counts = (self.bad_messages, self.jobs_watch.refused)
        if counts != self.reported_counts:
            self.reported_counts = counts
            beat.update(bad_messages=counts[0], refused=counts[1])
        now = time.monotonic()
        if now - self.last_machine >= _MACHINE_EVERY_S:
            self.last_machine = now
            beat["machine"] = self.host_facts.facts()
        if whole_state:
            beat["jobs"] = self._state()
        self._to_master(P.WORKER_HEARTBEAT, beat)

    def _watch_master(self, now: float) -> None:
        silent = now - self.last_ack
        if silent <= lost_after(self.timeouts.heartbeat_timeout, self.beat_every):
            self.redials = 0
            return
        if not self.master_lost:
            self.master_lost = True
            logger.warning(
                "no answer from the master at %s for %.1f s; the %d actors here keep serving "
                "their clients while this worker redials",
                self.master_address,
                silent,
                len(self.claimed),
            )
        if self.redials == 0 or now >= self.next_redial:
            self._redial()
            self.redials += 1
            self.next_redial = now + self.timeouts.redial_after(self.redials)
            self.last_register = now
            self._to_master(P.REGISTER_WORKER, self._registration())

    def _drain(self, sock: zmq.Socket, max_frames: int, handler: Callable[..., None]) -> None:
        for _ in range(P.MAX_BURST):  # a flood cannot hold up heartbeats and reaping
            try:
                frames = P.recv_bounded(sock, max_frames)
            except zmq.Again:
                return
            self._handle(frames, handler)

    def _handle(self, frames: list[bytes] | None, handler: Callable[..., None]) -> None:
        """Handle one message: a malformed one is counted and dropped, a failure logged."""
        try:
            if frames is None:
                raise P.BadMessage("too many frames")
            handler(frames)
        except (P.BadMessage, UnicodeDecodeError) as exc:
            self.bad_messages += 1
            if self.bad_messages <= 10 or self.bad_messages % 1000 == 0:
                logger.warning("dropped a malformed message (%s)", exc)
        except Exception:  # one message never ends the worker and its actors
            self._count_failure("a message")

    def _safely(self, duty: Callable[[], None]) -> None:
        try:
            duty()
        except Exception:
            self._count_failure(duty.__name__.strip("_").replace("_", " "))

    def _count_failure(self, what: str) -> None:
        self.failures += 1
        if self.failures <= 10 or self.failures % 1000 == 0:
            logger.exception("%s failed (%d failures so far); going on", what, self.failures)

    def _on_master_message(self, frames: list[bytes]) -> None:
        if len(frames) != 2:
            raise P.BadMessage("a master message has a tag and one JSON frame")
        tag, payload = frames[0], P.decode(frames[1])
        self.last_ack = time.monotonic()
        if self.master_lost:
            self.master_lost = False
            logger.info("the master at %s answers again", self.master_address)
        if tag == P.ACK:
            if payload.get("registered"):
                self._accept_registration(payload)
            else:
                self._follow_pace(payload)
            if payload.get("resync"):
                self._send_state()
        elif tag == P.KILL_JOB:
            self._kill(P.text(payload, "job_id", max_len=64))
        elif tag == P.SHUTDOWN:
            self.running = False
        elif tag == P.ERROR and payload.get("kind") == "unknown_worker":
            # A restarted master (or one that gave up on this worker): register again with
            # every job this worker runs, so its actors stay on the books.
            now = time.monotonic()
            if now - self.last_register > self.timeouts.heartbeat_interval:
                self.last_register = now
                logger.info("registering again with the master at %s", self.master_address)
                self._to_master(P.REGISTER_WORKER, self._registration())
        elif tag == P.ERROR:
            logger.error("the master refused this worker: %s", payload.get("message"))

    def _follow_pace(self, ack: dict[str, Any]) -> None:
        """Beat as often as the master asks, never more often than configured."""
        every = P.number(ack, "every", 0.0, MAX_PACE_S, self.beat_every)
        self.beat_every = max(self.timeouts.heartbeat_interval, every)

    def _send_state(self) -> None:
        """The master missed a change: send the whole state (at most once per interval)."""
        now = time.monotonic()
        if now - self.last_state_sent >= self.timeouts.heartbeat_interval:
            self.last_state_sent = now
            self._heartbeat(whole_state=True)

    def shutdown(self) -> None:
        """End every job's process group, then close the sockets."""
        for proc in self.procs.values():
            if proc.returncode is None:
                kill_group(proc.pid)
        for proc in self.procs.values():
            proc.wait()
        shutil.rmtree(self.files_dir, ignore_errors=True)
        self.master_watch.close(self.master)
        self.jobs_watch.close(self.jobs_socket)
        self.master.close(linger=200)
        self.jobs_socket.close()
        if self.gatekeeper is not None:
            self.gatekeeper.stop()
        self.context.term()


class _Host:
    """This host's CPU count, load and memory, as the master shows them. On Linux the memory is
    read from a ``/proc/meminfo`` kept open: a worker whose descriptors a flood of connections
    took still reports it (and so still heartbeats and answers ``xparl status``)."""

    def __init__(self) -> None:
        try:
            self.meminfo: int | None = os.open("/proc/meminfo", os.O_RDONLY)
        except OSError:
            self.meminfo = None

    def facts(self) -> dict[str, Any]:
        total, available = self._memory()
        return {
            "cpu_count": os.cpu_count() or 1,
            "load": [float(x) for x in os.getloadavg()],
            "memory_total": total,
            "memory_available": available,
        }

    def _memory(self) -> tuple[int, int]:
        if self.meminfo is None:
            memory = psutil.virtual_memory()
            return memory.total, memory.available
        kib = {}
        for line in os.pread(self.meminfo, 16384, 0).decode().splitlines():
            key, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                kib[key] = int(value.split()[0])
        return kib["MemTotal"] * 1024, kib.get("MemAvailable", kib.get("MemFree", 0)) * 1024


def _exit_reason(job_id: str, pid: int, code: int) -> dict[str, str]:
    if code == 0:
        return {"reason": "released", "message": "released by its client"}
    return {
        "reason": "exited",
        "message": f"the actor's process (job {job_id}, pid {pid}) on {socket.gethostname()} "
        f"died ({_exit_text(code)}); its log: `xparl logs {job_id}`. Create a new actor to go on.",
    }


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the worker process; the cluster secret arrives on stdin's first line."""
    parser = argparse.ArgumentParser(prog="python -m parl.remote.worker")
    parser.add_argument("--address", required=True)
    parser.add_argument("--cpu_num", type=int, required=True)
    parser.add_argument("--gpu", default="")
    parser.add_argument("--host", default=default_host())
    parser.add_argument("--advertise-host", default=None)
    parser.add_argument("--port-range", default=None)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--ready-file", default=None)
    parser.add_argument("--owner-pid", type=int, default=None)
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.AUTH.value)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s worker %(levelname)s %(message)s"
    )
    secret = sys.stdin.readline().strip() or None
    raise_fd_limit()
    gpus = [g.strip() for g in args.gpu.split(",") if g.strip()]
    try:
        worker = Worker(
            args.address,
            args.cpu_num,
            gpus,
            args.host,
            Path(args.data_dir),
            Timeouts(),
            Security.for_mode(Mode(args.mode), secret),
            Limits(),
            args.advertise_host,
            args.port_range,
            args.owner_pid,
        )
    except (ValueError, zmq.ZMQError) as exc:
        _fail(args.ready_file, str(exc))

    def stop(signum: int, frame: Any) -> None:
        worker.running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        worker.register()
    except (RuntimeError, P.BadMessage) as exc:
        worker.shutdown()
        _fail(args.ready_file, str(exc))
    if args.ready_file:
        ready = {"pid": os.getpid(), "worker_id": worker.worker_id, "address": worker.address}
        write_atomic(args.ready_file, P.encode(ready))
    logger.info(
        "worker %s serving %s with %d CPUs, GPUs %s (%s)",
        worker.worker_id,
        args.address,
        args.cpu_num,
        gpus,
        worker.job_security.mode.value,
    )
    worker.serve()


def _fail(ready_file: str | None, message: str) -> NoReturn:
    logger.error("%s", message)
    if ready_file:
        write_atomic(ready_file, P.encode({"error": message}))
    sys.exit(2)


if __name__ == "__main__":
    main()
