"""A real xparl master under thousands of simulated workers: the control plane at scale.

Run ``python -m benchmarks.remote.simulate_cluster --workers 1000 --actors 8000`` (add
``--profile`` for a cProfile of the master). The master is the real one (``parl.remote.master``,
started as ``xparl start`` does, secret on); each simulated worker is its own DEALER socket with
its own authenticated connection, speaking the worker protocol through the project's own modules
(registration with its warm jobs, heartbeats at the pace the master asks, numbered job
changes, kill orders answered by a job exit and a new warm job), but it starts no job processes.
Actors are requested by the real :class:`parl.remote.client.Client` from several threads, and each
grant is claimed by the simulated worker that owns the job, as a job's INIT makes a real worker do.

Measured, in order: every worker registers; the master idle (its CPU, heartbeat answer times,
``status`` and the overview that ``xparl status`` prints); the cluster filling to ``--actors``
(grant times, actors per second, master CPU); the cluster full (the same as idle); with
``--drop N``, N workers' connections closed at once and the seconds until the master counts
them all lost. The master's
lag (how old the heartbeats it reads are) and lost workers are polled throughout. Results go to
``benchmarks/remote/results_cluster/<workers>x<cpus>.json`` and the table of every such run to
``benchmarks/remote/results_cluster.md``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pstats
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from parl.remote import protocol as P
from parl.remote.client import Client
from parl.remote.cluster import LocalCluster, query
from parl.remote.config import Timeouts
from parl.remote.overview import cluster_overview
from parl.remote.processes import raise_fd_limit
from parl.remote.security import Security
from parl.remote.simulation import run_workers, worker_ids

import psutil
import zmq

from benchmarks._report import command, commit, machine

HERE = Path(__file__).resolve().parent

RESULTS = HERE / "results_cluster"


# ---------------------------------------------------------------------- the inspect stand-in
def serve_inspect(context: zmq.Context, security: Security, stop: threading.Event) -> str:
    """One socket answering INSPECT for every simulated worker (they advertise its address),
    so the overview's bounded worker queries cost what they cost against real workers."""
    sock = context.socket(zmq.ROUTER)
    sock.linger = 0
    security.serve_control(sock)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    memory = psutil.virtual_memory()
    report = {
        "hostname": "simulated",
        "cpu_count": os.cpu_count() or 1,
        "load": list(os.getloadavg()),
        "memory_total": memory.total,
        "memory_available": memory.available,
        "actors": [],
        "ended": [],
    }

    def answer() -> None:
        while not stop.is_set():
            if sock.poll(100):
                identity, tag, _ = sock.recv_multipart()
                if tag == P.INSPECT:
                    sock.send_multipart([identity, P.INSPECT, P.encode(report)])
        sock.close()

    threading.Thread(target=answer, daemon=True).start()
    return f"127.0.0.1:{port}"


def run_workers_niced(nice: int, *args: Any) -> None:
    """The simulated workers at a lower priority: on one machine they need far more CPU than
    the master they load (every worker's crypto and polling), and in a real cluster they run
    on other machines; niced, they cannot starve the master and make it look slow."""
    os.nice(nice)
    run_workers(*args)


# ---------------------------------------------------------------------- measurements
def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary_ms(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "p50_ms": _ms(percentile(values, 0.5)),
        "p99_ms": _ms(percentile(values, 0.99)),
        "max_ms": _ms(max(values) if values else None),
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


class MasterWatch:
    """The master's CPU over a window, and its status (lag, lost workers) once a second."""

    def __init__(self, pid: int, address: str, security: Security) -> None:
        self.process = psutil.Process(pid)
        self.address = address
        self.security = security
        self.samples: list[tuple[float, float, int, int]] = []  # (at, lag, lost, workers)
        self.status_times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(1.0):
            started = time.monotonic()
            try:
                status = query(self.address, P.STATUS, {"limit": 0}, 10.0, self.security)
            except ConnectionError:
                continue
            self.status_times.append(time.monotonic() - started)
            counts = status["counts"]
            sample = (started, status["lag_s"], counts["lost_workers"], counts["workers"])
            self.samples.append(sample)

    def cpu_seconds(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def main_thread_cpu_seconds(self) -> float:
        """The Python thread's share (the rest is libzmq's I/O and reaper threads)."""
        main = next(t for t in self.process.threads() if t.id == self.process.pid)
        return main.user_time + main.system_time

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


def measure_phase(
    name: str,
    seconds: float,
    watch: MasterWatch,
    address: str,
    security: Security,
) -> dict[str, Any]:
    """Master CPU over ``seconds``, then the time of ``status`` and of the overview."""
    window = [time.time()]
    start, cpu0, main0 = time.monotonic(), watch.cpu_seconds(), watch.main_thread_cpu_seconds()
    time.sleep(seconds)
    end, cpu1, main1 = time.monotonic(), watch.cpu_seconds(), watch.main_thread_cpu_seconds()
    window.append(time.time())
    status_s, overview_s = [], []
    for _ in range(3):
        t0 = time.monotonic()
        query(address, P.STATUS, timeout=30.0, security=security)
        t1 = time.monotonic()
        cluster_overview(address, security, timeout=30.0)
        status_s.append(t1 - t0)
        overview_s.append(time.monotonic() - t1)
    total, main = 100 * (cpu1 - cpu0) / (end - start), 100 * (main1 - main0) / (end - start)
    print(f"{name}: master CPU {total:.1f} % (its Python thread {main:.1f} %)", flush=True)
    return {
        "window": window,  # wall clock, as heartbeats are stamped
        "master_cpu_percent": round(total, 1),
        "master_python_thread_cpu_percent": round(main, 1),
        "master_rss_mib": round(watch.process.memory_info().rss / 2**20, 1),
        "status_s": round(max(status_s), 3),
        "overview_s": round(max(overview_s), 3),
    }


def fill(
    client: Client,
    actors: int,
    threads: int,
    owner: dict[str, int],
    pipes: list[Connection],
    pipe_lock: threading.Lock,
) -> dict[str, Any]:
    """Request ``actors`` actors from ``threads`` threads; each grant is claimed at once."""
    latencies: list[float] = []
    errors: list[str] = []
    counter = iter(range(actors))
    lock = threading.Lock()

    def run() -> None:
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            started = time.monotonic()
            try:
                grant = client.request(P.REQUEST_ACTOR, {"n_gpu": 0, "timeout": 60.0}, 65.0)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            latencies.append(time.monotonic() - started)
            worker_id = str(grant["worker_id"])
            with pipe_lock:
                pipes[owner[worker_id[:2]]].send(
                    ("claim", worker_id, grant["job_id"], client.client_id)
                )

    start, wall = time.monotonic(), time.time()
    pool = [threading.Thread(target=run) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.monotonic() - start
    print(f"filled {len(latencies)} actors in {elapsed:.1f} s ({len(errors)} errors)", flush=True)
    return {
        "window": [wall, wall + elapsed],
        "granted": len(latencies),
        "errors": len(errors),
        "first_errors": errors[:5],
        "seconds": round(elapsed, 2),
        "actors_per_s": round(len(latencies) / elapsed, 1),
        "grant": summary_ms(latencies),
    }


def answers_in(answers: list[tuple[float, float]], window: list[float]) -> dict[str, Any]:
    """Answer times of the heartbeats sent in ``window``, and how many were sent a second."""
    lateness = [late for sent, late in answers if window[0] <= sent <= window[1]]
    span = window[1] - window[0]
    return {**summary_ms(lateness), "per_s": round(len(lateness) / span) if span > 0 else None}


# ---------------------------------------------------------------------- the run
def drop_workers(n: int, pipe: Connection, address: str, security: Security) -> dict[str, Any]:
    """Close ``n`` simulated workers' connections at once, as their processes' deaths would;
    return the seconds until the master counts every one of them lost (polled every 50 ms)."""
    before = query(address, P.STATUS, {"limit": 0}, 30.0, security)["counts"]["lost_workers"]
    pipe.send(("drop", n))
    dropped = len(pipe.recv())
    started = time.monotonic()
    lost, status = before, {}
    while time.monotonic() - started < 120.0 and lost < before + dropped:
        status = query(address, P.STATUS, {"limit": 0}, 30.0, security)
        lost = status["counts"]["lost_workers"]
        time.sleep(0.05)
    return {
        "dropped": dropped,
        "all_lost_s": round(time.monotonic() - started, 2) if lost >= before + dropped else None,
        "beat_every_s": status.get("beat_every_s"),
        "heartbeat_timeout_s": Timeouts().heartbeat_timeout,
    }


def simulate(args: argparse.Namespace) -> dict[str, Any]:
    raise_fd_limit()
    RESULTS.mkdir(exist_ok=True)
    profile = RESULTS / f"profile_{args.workers}x{args.cpus}.prof" if args.profile else None
    if profile is not None:
        os.environ["XPARL_PYTHON"] = f"{sys.executable} -m cProfile -o {profile}"
    cluster = LocalCluster.start(0, embedded=True, ready_timeout=60.0)
    os.environ.pop("XPARL_PYTHON", None)
    security = cluster.security
    assert security.secret is not None
    stop_inspect = threading.Event()
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    inspect = serve_inspect(context, security, stop_inspect)
    procs, pipes = [], []
    secret = security.secret
    per_proc = -(-args.workers // args.procs)
    owner: dict[str, int] = {}
    spawn = multiprocessing.get_context("spawn")
    for index in range(args.procs):
        count = min(per_proc, args.workers - index * per_proc)
        if count <= 0:
            break
        mine, theirs = spawn.Pipe()
        proc = spawn.Process(
            target=run_workers_niced,
            args=(args.nice, index, count, args.cpus, cluster.address, inspect, secret, theirs),
        )
        proc.start()
        procs.append(proc)
        pipes.append(mine)
        owner[worker_ids(index, 1)[0][:2]] = index
    result: dict[str, Any] = {
        "command": command(),
        "commit": commit(),
        "machine": machine(),
        "workers": args.workers,
        "cpus_per_worker": args.cpus,
        "actors": args.actors,
        "client_threads": args.threads,
        "simulator_processes": len(procs),
        "simulator_nice": args.nice,
        "heartbeat_interval_s": Timeouts().heartbeat_interval,
        "load_1m_at_start": round(os.getloadavg()[0], 2),  # other work on the machine
    }
    watch = MasterWatch(cluster.master["pid"], cluster.address, security)
    client: Client | None = None
    try:
        started = time.monotonic()
        deadline = started + args.register_timeout
        registered = 0
        while time.monotonic() < deadline:
            status = query(cluster.address, P.STATUS, {"limit": 0}, 30.0, security)
            registered = status["counts"]["workers"] + status["counts"]["lost_workers"]
            if registered >= args.workers:
                break
            time.sleep(0.5)
        result["registered"] = registered
        result["register_s"] = round(time.monotonic() - started, 1)
        print(f"{registered} workers registered in {result['register_s']} s", flush=True)
        time.sleep(2 * Timeouts().heartbeat_timeout)  # past the registration burst
        result["idle"] = measure_phase("idle", args.seconds, watch, cluster.address, security)
        client = Client(cluster.address, None, Timeouts(), security)
        pipe_lock = threading.Lock()
        result["filling"] = fill(client, args.actors, args.threads, owner, pipes, pipe_lock)
        cpu = watch.process.cpu_times()
        result["filling"]["master_cpu_s"] = round(cpu.user + cpu.system, 1)
        time.sleep(2 * Timeouts().heartbeat_interval)
        result["full"] = measure_phase("full", args.seconds, watch, cluster.address, security)
        if args.drop:
            result["dropping"] = drop_workers(args.drop, pipes[0], cluster.address, security)
        status = query(cluster.address, P.STATUS, {"limit": 0}, 30.0, security)
        result["final"] = {
            "actors": status["counts"]["actors"],
            "cpus_used": status["cpus_used"],
            "lost_workers": status["counts"]["lost_workers"],
            "lag_s": status["lag_s"],
            "beat_every_s": status["beat_every_s"],
            "refused_connections": status["refused_connections"],
            "idle_connections_hung_up": status["idle_connections_hung_up"],
        }
    finally:
        watch.stop()
        if client is not None:
            client.close()
        reports = []
        for pipe in pipes:
            pipe.send(("stop",))
        for pipe in pipes:
            if pipe.poll(60):
                reports.append(pipe.recv())
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
        stop_inspect.set()
        cluster.stop(timeout=30.0)
    answers = [a for r in reports for a in r["answers"]]
    for phase in ("idle", "filling", "full"):
        if phase in result:
            result[phase]["heartbeat_answer"] = answers_in(answers, result[phase]["window"])
            del result[phase]["window"]
    result["load_1m_at_end"] = round(os.getloadavg()[0], 2)
    result["heartbeats_unanswered_at_end"] = sum(r["unanswered"] for r in reports)
    result["lag_s_max"] = max((s[1] for s in watch.samples), default=None)
    result["lost_workers_max"] = max((s[2] for s in watch.samples), default=None)
    result["status_s_max_polled"] = round(max(watch.status_times, default=0.0), 3)
    if profile is not None and profile.exists():
        text = RESULTS / f"profile_{args.workers}x{args.cpus}.txt"
        with text.open("w") as out:
            stats = pstats.Stats(str(profile), stream=out)
            stats.sort_stats("tottime").print_stats(30)
        profile.unlink()
        result["profile"] = str(text.relative_to(HERE))
    return result


def write_table() -> None:
    """``results_cluster.md`` from every run's JSON, smallest cluster first."""
    runs = [json.loads(p.read_text()) for p in RESULTS.glob("*.json")]
    runs.sort(key=lambda r: (r["workers"], r["actors"]))
    lines = [
        "# xparl's master under simulated workers",
        "",
        "`benchmarks/remote/simulate_cluster.py`: a real master, simulated workers (one "
        "authenticated DEALER connection each, the real worker protocol, no job processes), "
        "actors requested by the real client from several threads. Master CPU is percent of one "
        "core, all its threads (in brackets its Python thread; the rest is libzmq's I/O "
        "thread: receiving, authenticating and sending); heartbeat answer times are measured by "
        "the simulator (an upper bound: its own poll loop adds up to a few ms); `status` is the "
        "master's answer (at most 1,000 entries per list), the overview is what `xparl status` "
        "prints (plus at most 16 worker queries).",
        "",
        "| workers x CPUs | registered | master CPU idle (Python thread) | "
        "heartbeats/s idle (every) | heartbeat p99 idle / filling | "
        "`status` / overview | grants p99 filling | actors/s | master CPU full | lag max | "
        "lost max | load 1 m | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        idle, filling, full = r.get("idle", {}), r.get("filling", {}), r.get("full", {})
        hb_idle = idle.get("heartbeat_answer", {}).get("p99_ms")
        hb_fill = filling.get("heartbeat_answer", {}).get("p99_ms")
        lines.append(
            f"| {r['workers']:,} x {r['cpus_per_worker']} | {r.get('registered')} | "
            f"{idle.get('master_cpu_percent')} % "
            f"({idle.get('master_python_thread_cpu_percent')} %) | "
            f"{idle.get('heartbeat_answer', {}).get('per_s')} "
            f"({r.get('final', {}).get('beat_every_s', r['heartbeat_interval_s'])} s) | "
            f"{hb_idle} / {hb_fill} ms | "
            f"{full.get('status_s')} / {full.get('overview_s')} s | "
            f"{filling.get('grant', {}).get('p99_ms')} ms ({filling.get('granted')} actors) | "
            f"{filling.get('actors_per_s')} | {full.get('master_cpu_percent')} % | "
            f"{r.get('lag_s_max')} s | {r.get('lost_workers_max')} | "
            f"{r.get('load_1m_at_start')} -> {r.get('load_1m_at_end')} | `{r['commit']}` |"
        )
    dropping = [r for r in runs if r.get("dropping")]
    if dropping:
        lines += [
            "",
            "Dead workers: `--drop N` closes N simulated workers' connections at once, as "
            "their processes' deaths would, once the cluster is full; the master counts a "
            "worker lost when its connection closes, not after the heartbeat silence.",
            "",
            "| workers x CPUs | dropped | all counted lost after | heartbeat pace | commit |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['workers']:,} x {r['cpus_per_worker']} | {r['dropping']['dropped']} | "
            f"{r['dropping']['all_lost_s']} s | {r['dropping']['beat_every_s']} s | "
            f"`{r['commit']}` |"
            for r in dropping
        ]
    lines += ["", "Runs (command, machine):", ""]
    lines += [f"- `{r['command']}` on {r['machine']}" for r in runs]
    profiles = sorted(RESULTS.glob("profile_*.txt"))
    if profiles:
        lines += ["", "The master's profiles (cProfile, slower than the runs above):", ""]
        lines += [f"- [`{p.name}`](results_cluster/{p.name})" for p in profiles]
    (HERE / "results_cluster.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=100)
    parser.add_argument("--cpus", type=int, default=8, help="CPUs per simulated worker")
    parser.add_argument("--actors", type=int, default=400, help="actors to create while filling")
    parser.add_argument("--threads", type=int, default=8, help="client threads requesting actors")
    parser.add_argument("--procs", type=int, default=0, help="simulator processes (0: auto)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each window")
    parser.add_argument(
        "--nice", type=int, default=19, help="niceness of the simulator processes (0: none)"
    )
    parser.add_argument("--register-timeout", type=float, default=300.0)
    parser.add_argument(
        "--drop", type=int, default=0, help="workers whose connections close at the end"
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the master")
    parser.add_argument("--no-save", action="store_true", help="print, do not write results")
    args = parser.parse_args()
    if args.actors > args.workers * args.cpus:
        parser.error(
            f"--actors {args.actors} is more than the cluster's {args.workers * args.cpus} CPUs"
        )
    if args.procs <= 0:
        args.procs = max(1, min(8, -(-args.workers // 1250)))
    result = simulate(args)
    text = json.dumps(result, indent=1)
    print(text)
    if not args.no_save:
        (RESULTS / f"{args.workers}x{args.cpus}.json").write_text(text + "\n")
        write_table()


if __name__ == "__main__":
    main()
