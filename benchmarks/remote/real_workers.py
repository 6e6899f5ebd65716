"""Real xparl processes at scale: N real workers on this machine, then actors created and released
in a loop.

Run ``python -m benchmarks.remote.real_workers`` (100 workers × 8 CPUs, 500 actors) or smaller,
e.g. ``--workers 5 --actors 100``. It starts a real master (``xparl start --cpu_num 0``, its own
``XPARL_HOME`` in a temporary folder, secret on, no monitor) and N real workers (``xparl connect
--cpu_num 8``, a few at a time), and waits until every worker registered and every warm job is
ready. Measured, in order:

- the master idle with no worker (the baseline), then with N workers: its CPU (``cpu_times`` over
  a window) and RSS, the CPU and memory (RSS and PSS) of the whole cluster, ``xparl status`` time;
- ``--actors`` actors created (from ``--threads`` threads, each actor answering one call) and
  released in batches of at most the cluster's capacity; after each batch, once the workers have
  refilled their pools, the RSS and open descriptors of the master, every worker and this client.

A worker keeps one warm job process per CPU (there is no other pool size), so N workers hold
N × (cpu_num + 1) processes. After the first worker is up the benchmark measures what it costs
(PSS of the worker and its jobs) and, when N of them do not fit in the available memory (less
``--reserve-gib``), starts only as many as fit and says so in the results.

Every process it started is stopped by pid (then ``xparl stop --port``); the temporary
``XPARL_HOME`` is removed, or kept with the cluster's logs when the run fails. Results go to
``benchmarks/remote/real_workers.md`` and ``benchmarks/remote/real_workers/<workers>x<cpus>.json``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import parl
from parl.remote import protocol as P
from parl.remote.cluster import connected_workers, query, recorded_clusters, stop_process

import psutil

from benchmarks._report import command, commit, header, machine, markdown_table

HERE = Path(__file__).resolve().parent

RESULTS = HERE / "real_workers"
XPARL = [sys.executable, "-m", "parl.remote.cli"]
MIB = 2**20


class Probe:
    """The benchmark's actor: a job process that answers one call."""

    def pid(self) -> int:
        return os.getpid()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def xparl(*args: str, timeout: float = 120.0) -> str:
    """Run an ``xparl`` command; its output, or RuntimeError with what it printed."""
    done = subprocess.run([*XPARL, *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"xparl {' '.join(args)} failed: {done.stdout}{done.stderr}")
    return done.stdout


def cpu_seconds(processes: list[psutil.Process]) -> float:
    """User + system CPU seconds of the processes that still run."""
    total = 0.0
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def tree(roots: list[int]) -> list[psutil.Process]:
    """The processes ``roots`` and all their descendants (those that still run).

    One pass over the process table (``Process.children`` makes one per call: a hundred workers
    would cost a hundred passes, on the machine being measured).
    """
    kids: dict[int, list[psutil.Process]] = {}
    for proc in psutil.process_iter(["ppid"]):
        kids.setdefault(proc.info["ppid"], []).append(proc)
    found, todo = [], []
    for pid in roots:
        with contextlib.suppress(psutil.Error):
            todo.append(psutil.Process(pid))
    while todo:
        proc = todo.pop()
        found.append(proc)
        todo += kids.get(proc.pid, [])
    return found


def memory_mib(processes: list[psutil.Process]) -> dict[str, float]:
    """Summed RSS (counts shared pages once per process) and PSS (shares them out) in MiB."""
    rss = pss = 0
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            info = proc.memory_full_info()
            rss += info.rss
            pss += info.pss
    return {"rss_mib": round(rss / MIB, 1), "pss_mib": round(pss / MIB, 1)}


def rss_and_fds(pid: int) -> tuple[float, int] | None:
    try:
        proc = psutil.Process(pid)
        return round(proc.memory_info().rss / MIB, 1), proc.num_fds()
    except psutil.Error:
        return None


class Cluster:
    """A real master and the workers ``xparl connect`` added to it, all known by pid."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.address = f"127.0.0.1:{port}"
        xparl("start", "--port", str(port), "--cpu_num", "0", "--no-monitor")
        self.record = next(c for c in recorded_clusters() if c.port == port)
        self.master = psutil.Process(self.record.master["pid"])
        self.workers: list[dict[str, Any]] = []

    def status(self, timeout: float = 30.0) -> dict[str, Any]:
        """The master's status, without its lists (``limit`` 0): counts and totals only."""
        return query(self.address, P.STATUS, {"limit": 0}, timeout, self.record.security)

    def connect(self, count: int, cpu_num: int, parallel: int, timeout: float) -> None:
        """Add ``count`` workers with ``xparl connect``, ``parallel`` at a time, each group
        once the warm pools of the one before are full (so at most ``parallel × cpu_num`` job
        processes start at once)."""
        args = ("connect", "--address", self.address, "--cpu_num", str(cpu_num))
        with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
            while count > 0:
                group = min(parallel, count)
                try:
                    for future in [pool.submit(xparl, *args) for _ in range(group)]:
                        future.result()
                finally:
                    self._add_recorded_workers()
                count -= group
                self.wait_ready(len(self.workers), len(self.workers) * cpu_num, timeout)

    def _add_recorded_workers(self) -> None:
        known = {record["pid"] for record in self.workers}
        self.workers += [r for _, r in connected_workers() if r["pid"] not in known]

    def wait_ready(self, workers: int, jobs: int, timeout: float) -> dict[str, Any]:
        """Wait until ``workers`` workers answer and ``jobs`` warm jobs are ready."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            if status["counts"]["workers"] >= workers and status["idle_jobs"] >= jobs:
                return status
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"after {timeout:g} s the master counts {status['counts']['workers']} of "
                    f"{workers} workers and {status['idle_jobs']} of {jobs} warm jobs"
                )
            time.sleep(0.5)

    def processes(self) -> list[psutil.Process]:
        return tree([self.master.pid, *(w["pid"] for w in self.workers)])

    def stop(self) -> list[int]:
        """Stop every worker, then the master, by pid; return the pids still running after."""
        started = self.processes()
        for record in self.workers:
            stop_process(record)
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            xparl("stop", "--port", str(self.port))
        stop_process(self.record.master)
        _, alive = psutil.wait_procs(started, timeout=10)
        for proc in alive:  # a job its worker failed to end: reported, then ended here
            with contextlib.suppress(psutil.Error):
                proc.kill()
        return [proc.pid for proc in alive]


def idle_window(cluster: Cluster, seconds: float) -> dict[str, Any]:
    """CPU over ``seconds`` of idling (the master's, the workers', the jobs'), and memory."""
    everyone = cluster.processes()
    worker_pids = {w["pid"] for w in cluster.workers}
    groups = {
        "master": [cluster.master],
        "workers": [p for p in everyone if p.pid in worker_pids],
        "jobs": [p for p in everyone if p.pid not in worker_pids and p.pid != cluster.master.pid],
    }
    start = time.monotonic()
    before = {name: cpu_seconds(procs) for name, procs in groups.items()}
    time.sleep(seconds)
    elapsed = time.monotonic() - start
    percent = {
        name: round(100 * (cpu_seconds(procs) - before[name]) / elapsed, 2)
        for name, procs in groups.items()
    }
    return {
        "seconds": round(elapsed, 1),
        "cpu_percent": percent,
        "master": memory_mib([cluster.master]),
        "cluster": {**memory_mib(everyone), "processes": len(everyone)},
        "master_fds": cluster.master.num_fds(),
        "load_1m": round(os.getloadavg()[0], 1),  # other work on the machine shows here
    }


def status_seconds(cluster: Cluster, repeats: int = 3) -> float:
    """The slowest of ``repeats`` runs of the ``xparl status`` command (a fresh process each)."""
    times = []
    for _ in range(repeats):
        start = time.monotonic()
        xparl("status", "--address", cluster.address)
        times.append(time.monotonic() - start)
    return round(max(times), 3)


def fitting_workers(cluster: Cluster, asked: int, reserve_gib: float) -> dict[str, Any]:
    """What one worker with its warm pool costs, and how many such workers fit in memory."""
    one = memory_mib(tree([cluster.workers[0]["pid"]]))
    available = psutil.virtual_memory().available / MIB
    room = available - reserve_gib * 1024
    fit = 1 + max(0, int(room // one["pss_mib"]))
    return {
        "per_worker": one,
        "available_mib": round(available),
        "reserve_mib": round(reserve_gib * 1024),
        "fit": fit,
        "workers": min(asked, fit),
    }


def sample(cluster: Cluster) -> dict[str, Any]:
    """RSS (MiB) and fds of the master, of each worker and of this client; the cluster's size."""
    workers = [rss_and_fds(w["pid"]) for w in cluster.workers]
    live = [w for w in workers if w is not None]
    return {
        "master": rss_and_fds(cluster.master.pid),
        "client": rss_and_fds(os.getpid()),
        "workers_rss_mib": round(sum(w[0] for w in live), 1),
        "workers_fds": sum(w[1] for w in live),
        "workers_each": workers,
        "workers_alive": len(live),
        "cluster_processes": len(cluster.processes()),
    }


def answering(remote_class: Any) -> Any:
    """A new actor of ``remote_class``, once it answered a call (its constructor ran)."""
    actor = remote_class()
    actor.pid()
    return actor


def churn(cluster: Cluster, args: argparse.Namespace, capacity: int) -> list[dict[str, Any]]:
    """Create and release ``args.actors`` actors in batches; a sample after each batch."""
    remote_probe = parl.remote_class(Probe)
    parl.connect(cluster.address)
    batch_size = min(args.batch, capacity)
    samples = []
    created = 0
    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        while created < args.actors:
            count = min(batch_size, args.actors - created)
            start = time.monotonic()
            actors = list(pool.map(lambda _: answering(remote_probe), range(count)))
            created_s = time.monotonic() - start
            pids = {actor.pid() for actor in actors}
            for actor in actors:
                actor.destroy()
            released_s = time.monotonic() - start - created_s
            del actors
            created += count
            refill_start = time.monotonic()
            cluster.wait_ready(len(cluster.workers), capacity, args.refill_timeout)
            refill_s = time.monotonic() - refill_start
            time.sleep(0.5)  # the status query's socket closes in the background: not a leak
            samples.append(
                {
                    "actors": created,
                    "batch": count,
                    "distinct_jobs": len(pids),
                    "create_s": round(created_s, 3),
                    "per_second": round(count / created_s, 1),
                    "release_s": round(released_s, 3),
                    "refill_s": round(refill_s, 2),
                    **sample(cluster),
                }
            )
            print(f"{created} actors: {count / created_s:.0f}/s", flush=True)
    return samples


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure on a cluster with its own ``XPARL_HOME``; its logs are kept if something fails."""
    home = tempfile.mkdtemp(prefix="xparl-real-workers-")
    os.environ["XPARL_HOME"] = home
    try:
        result = measure(args)
    except BaseException:
        print(f"the cluster's logs are kept in {home}", file=sys.stderr)
        raise
    shutil.rmtree(home, ignore_errors=True)
    return result


def measure(args: argparse.Namespace) -> dict[str, Any]:
    cluster = Cluster(free_port())
    result: dict[str, Any] = {"command": command(), "commit": commit(), "machine": machine()}
    try:
        result["master_alone"] = idle_window(cluster, args.seconds)
        started = time.monotonic()
        cluster.connect(1, args.cpus, 1, args.register_timeout)
        fit = fitting_workers(cluster, args.workers, args.reserve_gib)
        result["memory_fit"] = fit
        cluster.connect(fit["workers"] - 1, args.cpus, args.parallel, args.register_timeout)
        ready = cluster.wait_ready(
            fit["workers"], fit["workers"] * args.cpus, args.register_timeout
        )
        result["workers"] = ready["counts"]["workers"]
        result["cpus"] = ready["cpus_total"]
        result["start_s"] = round(time.monotonic() - started, 1)
        time.sleep(args.settle)
        result["idle"] = idle_window(cluster, args.seconds)
        result["idle"]["status_command_s"] = status_seconds(cluster)
        result["idle"]["lag_s"] = cluster.status()["lag_s"]
        result["churn"] = churn(cluster, args, ready["cpus_total"])
        end = cluster.status()
        result["after"] = {
            k: end[k] for k in ("lag_s", "behind", "bad_messages", "internal_errors")
        } | {"lost_workers": end["counts"]["lost_workers"], "actors": end["counts"]["actors"]}
    finally:
        result["left_running"] = cluster.stop()
    return result


def checkpoints(samples: list[dict[str, Any]]) -> list[int]:
    """Indices of the samples the leak table shows: the first, after warm-up (the second
    batch), halfway from there (when there are enough batches) and the last."""
    last = len(samples) - 1
    warm = min(1, last)
    middle = (warm + last) // 2
    return sorted({0, warm, middle, last})


def trend(name: str, samples: list[dict[str, Any]], pick: Any) -> tuple[str, ...]:
    """A row: the value at each checkpoint and its change between the checkpoints after
    warm-up (a leak keeps growing in each; a warm-up flattens)."""
    values = [pick(samples[i]) for i in checkpoints(samples)]
    changes = [f"{b - a:+.1f}" for a, b in itertools.pairwise(values[1:])]
    return (name, *(f"{v:g}" for v in values), *changes)


def simulator_idle(workers: int, cpus: int) -> tuple[float, str] | None:
    """The idle master CPU that ``simulate_cluster.py`` recorded for this size, if it did."""
    path = HERE / "results_cluster" / f"{workers}x{cpus}.json"
    if not path.is_file():
        return None
    recorded = json.loads(path.read_text())
    where = f"`{path.relative_to(HERE.parent.parent)}`, commit `{recorded.get('commit', '?')}`"
    return recorded["idle"]["master_cpu_percent"], where


def write(result: dict[str, Any]) -> str:
    fit, alone, idle, samples = (
        result["memory_fit"],
        result["master_alone"],
        result["idle"],
        result["churn"],
    )
    per_worker = fit["per_worker"]
    text = header(f"xparl with real workers: {result['workers']} workers, {result['cpus']} CPUs")
    text += (
        f"- one worker with its warm pool (a job process per CPU): PSS {per_worker['pss_mib']:.0f}"
        f" MiB (RSS {per_worker['rss_mib']:.0f} MiB); {fit['available_mib']:,} MiB available, "
        f"{fit['reserve_mib']:,} MiB kept free: room for {fit['fit']} workers ({result['asked']}"
        f" need {result['asked'] * per_worker['pss_mib'] / 1024:.1f} GiB)"
    )
    if result["workers"] < result["asked"]:
        text += (
            f"; **{result['asked']} asked, {result['workers']} started** (a worker's pool is "
            "one job per CPU; no option makes it smaller)"
        )
    text += f"\n- {result['workers']} workers registered with every warm job in "
    text += f"{result['start_s']} s (`xparl connect`, {result['parallel']} at a time)\n"
    text += (
        f"- load average (1 min) at the end of the idle windows: {idle['load_1m']:g} with the "
        f"workers, {alone['load_1m']:g} before them ({os.cpu_count()} cores)\n\n"
    )
    cpu, cpu_alone = idle["cpu_percent"], alone["cpu_percent"]
    rows = [
        (
            "master CPU, idle",
            f"{cpu['master']:.2f} %",
            f"{cpu_alone['master']:.2f} %",
            f"{cpu['master'] - cpu_alone['master']:+.2f} points",
        ),
        (
            "master RSS",
            f"{idle['master']['rss_mib']:.0f} MiB",
            f"{alone['master']['rss_mib']:.0f} MiB",
            f"{(idle['master']['rss_mib'] - alone['master']['rss_mib']) / result['workers']:.2f}"
            " MiB per worker",
        ),
        ("master fds", idle["master_fds"], alone["master_fds"], ""),
        (
            "workers' CPU, idle (sum)",
            f"{cpu['workers']:.1f} %",
            "",
            f"{cpu['workers'] / result['workers']:.2f} % per worker",
        ),
        (
            "warm jobs' CPU, idle (sum)",
            f"{cpu['jobs']:.1f} %",
            "",
            f"{cpu['jobs'] / result['cpus']:.3f} % per job",
        ),
        (
            "whole cluster memory",
            f"PSS {idle['cluster']['pss_mib'] / 1024:.2f} GiB, RSS "
            f"{idle['cluster']['rss_mib'] / 1024:.2f} GiB ({idle['cluster']['processes']} procs)",
            f"PSS {alone['cluster']['pss_mib']:.0f} MiB",
            "",
        ),
        ("`xparl status` (slowest of 3)", f"{idle['status_command_s']:.2f} s", "", ""),
        ("master lag, idle", f"{idle['lag_s']:.3f} s", "", ""),
    ]
    simulated = simulator_idle(result["workers"], result["cpus"] // result["workers"])
    if simulated is not None and simulated[0] > 0:
        percent, source = simulated
        rows.append(
            (
                f"master CPU, idle, simulated workers ({source})",
                f"{percent:.2f} %",
                "",
                f"real / simulated: {cpu['master'] / percent:.2f}×",
            )
        )
    text += markdown_table(["idle cluster", f"{result['workers']} workers", "no worker", ""], rows)
    total = sum(s["batch"] for s in samples)
    seconds = sum(s["create_s"] for s in samples)
    text += (
        f"\n\n{total} actors created and released in {len(samples)} batches of up to "
        f"{samples[0]['batch']} ({result['threads']} client threads); an actor counts once it "
        f"answered a call. Creation: **{total / seconds:.0f} actors/s** overall. Each sample is "
        "taken once the workers refilled their pools; the first batch is the warm-up:\n\n"
    )
    leak_rows = [
        trend("master RSS MiB", samples, lambda s: s["master"][0]),
        trend("master fds", samples, lambda s: s["master"][1]),
        trend("workers' RSS MiB (sum)", samples, lambda s: s["workers_rss_mib"]),
        trend("workers' fds (sum)", samples, lambda s: s["workers_fds"]),
        trend("client RSS MiB", samples, lambda s: s["client"][0]),
        trend("client fds", samples, lambda s: s["client"][1]),
        trend("cluster processes", samples, lambda s: s["cluster_processes"]),
    ]
    points = checkpoints(samples)
    actors = [samples[i]["actors"] for i in points]
    columns = ["", *(f"after {n} actors" for n in actors)]
    columns += [f"change {a}–{b}" for a, b in itertools.pairwise(actors[1:])]
    text += markdown_table(columns, leak_rows)
    text += "\n\n" + markdown_table(
        ["actors", "created/s", "release s", "refill s", "master MiB/fds", "client MiB/fds"],
        [
            (
                s["actors"],
                f"{s['per_second']:.0f}",
                f"{s['release_s']:.2f}",
                f"{s['refill_s']:.1f}",
                "{} / {}".format(*s["master"]),
                "{} / {}".format(*s["client"]),
            )
            for s in samples
        ],
    )
    after = result["after"]
    text += (
        f"\n\nAfter the loop: {after['actors']} actors held, {after['lost_workers']} lost workers, "
        f"lag {after['lag_s']} s, {after['bad_messages']} malformed messages, "
        f"{after['internal_errors']} internal errors; processes left running after stopping by "
        f"pid: {len(result['left_running'])}.\n\n"
    )
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=100)
    parser.add_argument("--cpus", type=int, default=8, help="--cpu_num of each worker")
    parser.add_argument("--actors", type=int, default=500, help="actors created and released")
    parser.add_argument("--batch", type=int, default=50, help="actors per batch (≤ capacity)")
    parser.add_argument("--threads", type=int, default=8, help="client threads creating actors")
    parser.add_argument("--parallel", type=int, default=4, help="`xparl connect` at a time")
    parser.add_argument("--seconds", type=float, default=20.0, help="idle window")
    parser.add_argument("--settle", type=float, default=5.0, help="wait before the idle window")
    parser.add_argument("--reserve-gib", type=float, default=2.0, help="memory left free")
    parser.add_argument("--register-timeout", type=float, default=900.0)
    parser.add_argument("--refill-timeout", type=float, default=300.0)
    parser.add_argument("--no-save", action="store_true", help="print, do not write results")
    args = parser.parse_args()
    for name in ("workers", "cpus", "actors", "batch", "threads", "parallel"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    result = {**run(args), "asked": args.workers, "parallel": args.parallel}
    result["threads"] = args.threads
    text = write(result)
    print(text)
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        name = f"{result['workers']}x{args.cpus}.json"
        (RESULTS / name).write_text(json.dumps(result, indent=1) + "\n")
        with open(HERE / "real_workers.md", "a") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
