"""Benchmarks of parl-remote against the goals of the parl-remote issues.

Run ``python -m benchmarks.remote.bench_remote [--quick] [--security-only | --data-plane-only]``.
Each figure is printed in a markdown table with its baseline from the same run (plain pyzmq
send/recv of the same bytes, between two processes for the call path; the serial time of the
GIL demo; a cluster started with ``--insecure`` for the cost of authentication and encryption)
and written to ``benchmarks/remote/results.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psutil
import zmq

from benchmarks._report import commit, machine
from benchmarks._report import header as report_header
from benchmarks.remote import raw_zmq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def spin(n: int) -> int:
    """A pure-Python loop (holds the GIL)."""
    total = 0
    for i in range(n):
        total += i % 7
    return total


def make_actor_class():  # type: ignore[no-untyped-def]
    import parl

    @parl.remote_class
    class Bench:
        def noop(self) -> None:
            return None

        def echo(self, value: object) -> object:
            return value

        def spin(self, n: int) -> int:
            return spin(n)

    return Bench


def pyzmq_echo_seconds(payload: np.ndarray, repeats: int) -> float:
    """Median round trip of the same bytes over plain pyzmq DEALER/ROUTER (echo thread)."""
    context = zmq.Context()
    server = context.socket(zmq.ROUTER)
    port = server.bind_to_random_port("tcp://127.0.0.1")
    client = context.socket(zmq.DEALER)
    client.connect(f"tcp://127.0.0.1:{port}")

    def echo() -> None:
        for _ in range(repeats + 1):
            frames = server.recv_multipart(copy=False)
            server.send_multipart(frames, copy=False)

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    # The array's own buffer, as a memoryview (what pyzmq takes of whatever it sends): numpy's
    # stubs give ndarray the buffer protocol only from Python 3.12, and mypy checks for 3.10.
    data = payload.data
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        client.send(data, copy=False)
        client.recv(copy=False)
        times.append(time.perf_counter() - start)
    thread.join()
    client.close()
    server.close()
    context.term()
    return statistics.median(times[1:])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rss_of_tree(pids: list[int]) -> tuple[float, int]:
    procs = []
    for pid in pids:
        proc = psutil.Process(pid)
        procs += [proc, *proc.children(recursive=True)]
    return sum(p.memory_info().rss for p in procs) / 2**30, len(procs)


def latency(actor: object, reps: int) -> tuple[float, float]:
    """Median and p99 seconds of a trivial call."""
    for _ in range(100):
        actor.noop()  # type: ignore[attr-defined]
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        actor.noop()  # type: ignore[attr-defined]
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.99)]


def echo_seconds(actor: object, array: np.ndarray, reps: int) -> float:
    """Median seconds of echoing ``array`` through an actor."""
    actor.echo(array)  # type: ignore[attr-defined]
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        actor.echo(array)  # type: ignore[attr-defined]
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


THREADS_PER_ACTOR = 4


def calls_per_second(actors: list[object], duration: float) -> float:
    """Trivial calls per second, ``THREADS_PER_ACTOR`` threads calling each actor."""
    callers = [a for a in actors for _ in range(THREADS_PER_ACTOR)]
    counts = [0] * len(callers)
    stop = threading.Event()

    def drive(me: object, i: int) -> None:
        while not stop.is_set():
            me.noop()  # type: ignore[attr-defined]
            counts[i] += 1

    threads = [threading.Thread(target=drive, args=(a, i)) for i, a in enumerate(callers)]
    for thread in threads:
        thread.start()
    time.sleep(duration)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(counts) / duration


@contextlib.contextmanager
def background_load(processes: int) -> Iterator[None]:
    """Keep ``processes`` busy loops running (a machine loaded the same way in every run)."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)
    ]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(10)


def data_plane(quick: bool, rounds: int) -> list[str]:
    """The call path against raw ZeroMQ between two processes, default security (auth on).

    Rounds alternate a raw measurement and ours, so a busy minute of a shared machine hits both;
    each figure is the median over rounds, with the machine's load average beside it.
    """
    import parl.remote
    from parl.remote.cluster import LocalCluster

    Bench = make_actor_class()
    reps, duration = (1000, 1.0) if quick else (5000, 3.0)
    samples: dict[str, list[float]] = {}
    cluster = LocalCluster.start(4)
    parl.remote.connect(cluster.address)
    actors = [Bench() for _ in range(4)]
    with raw_zmq.start_servers(4) as ports, raw_zmq.start_servers(1, "rpc") as rpc_ports:
        for _ in range(rounds):
            figures = {
                "raw_median": raw_zmq.echo_round_trip(ports[0], b"", reps)[0],
                "floor_median": raw_zmq.rpc_round_trip(rpc_ports[0], reps),
                "median": latency(actors[0], reps)[0],
                "raw_calls": raw_zmq.calls_per_second(ports, duration),
                "calls": calls_per_second(actors, duration),
            }
            for key, value in figures.items():
                samples.setdefault(key, []).append(value)
    del actors
    parl.remote.disconnect()
    cluster.stop()
    best = {k: statistics.median(v) for k, v in samples.items()}
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return [
        "## The call path against raw ZeroMQ (two processes)",
        "",
        f"Median over {rounds} rounds in which raw and ours took turns; load average {load}. "
        "Raw: 4 echo processes, one socket and thread each (an actor runs one call at a time); "
        f"ours: 4 actors, {THREADS_PER_ACTOR} threads calling each. The Python RPC floor: a "
        "server that only unpickles the arguments, looks the method up and pickles the result "
        "(`raw_zmq.py rpc`), the least any remote call written in Python adds to the echo.",
        "",
        "| figure | parl-remote | raw ZeroMQ | ratio | goal |",
        "|---|---|---|---|---|",
        f"| trivial call round trip, median | {best['median'] * 1e6:.0f} µs "
        f"| {best['raw_median'] * 1e6:.0f} µs | {best['median'] / best['raw_median']:.2f}× "
        "| ≤ 1.25× |",
        f"| the Python RPC floor, median | {best['floor_median'] * 1e6:.0f} µs "
        f"| {best['raw_median'] * 1e6:.0f} µs | {best['floor_median'] / best['raw_median']:.2f}× "
        "| |",
        f"| calls/s, 4 actors × 4 threads | {best['calls']:,.0f} | {best['raw_calls']:,.0f} "
        f"| {best['calls'] / best['raw_calls']:.2f}× | ≥ 0.6× |",
    ]


def security_costs(quick: bool, rounds: int) -> list[tuple[str, ...]]:
    """Latency, 16 MiB echo and calls/s under --insecure, auth (default) and auth+encryption.

    Modes take turns within each round (so a slow minute of a shared machine hits all of them)
    and the median over rounds is reported, as a ratio to --insecure.
    """
    import parl.remote
    from parl.remote.cluster import LocalCluster
    from parl.remote.security import Mode

    Bench = make_actor_class()
    modes = [Mode.INSECURE, Mode.AUTH, Mode.ENCRYPT]
    reps, big_reps, duration = (300, 5, 1.0) if quick else (2000, 15, 3.0)
    array = np.random.default_rng(0).standard_normal(4 * 2**20).astype(np.float32)  # 16 MiB
    samples: dict[Mode, dict[str, list[float]]] = {m: {} for m in modes}
    for _ in range(rounds):
        for mode in modes:
            cluster = LocalCluster.start(4, mode=mode)
            parl.remote.connect(cluster.address, insecure=mode is Mode.INSECURE)
            actors = [Bench() for _ in range(4)]
            median, p99 = latency(actors[0], reps)
            figures = {
                "median": median,
                "p99": p99,
                "echo": echo_seconds(actors[0], array, big_reps),
                "calls": calls_per_second(actors, duration),
            }
            for key, value in figures.items():
                samples[mode].setdefault(key, []).append(value)
            del actors
            parl.remote.disconnect()
            cluster.stop()
    best = {m: {k: statistics.median(v) for k, v in samples[m].items()} for m in modes}
    base = best[Mode.INSECURE]

    def cell(mode: Mode, key: str, text: str) -> str:
        if mode is Mode.INSECURE:
            return text
        return f"{text} ({best[mode][key] / base[key]:.2f}×)"

    rows = []
    for key, label, fmt in (
        ("median", "trivial call, median", lambda v: f"{v * 1e6:.0f} µs"),
        ("p99", "trivial call, p99", lambda v: f"{v * 1e6:.0f} µs"),
        ("echo", "16 MiB float32 echo", lambda v: f"{v * 1e3:.1f} ms"),
        ("calls", "calls/s, 4 actors × 4 threads", lambda v: f"{v:,.0f}"),
    ):
        rows.append((label, *(cell(m, key, fmt(best[m][key])) for m in modes)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--security-only", action="store_true", help="only the cost of security")
    parser.add_argument(
        "--data-plane-only", action="store_true", help="only the call path against raw ZeroMQ"
    )
    parser.add_argument(
        "--background-load",
        type=int,
        default=0,
        help="busy-loop processes kept running during the call-path figures (a loaded machine)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the alternating figures")
    parser.add_argument("--output", default=str(HERE / "results.md"))
    args = parser.parse_args()
    reps = 300 if args.quick else 3000
    big_reps = 5 if args.quick else 20
    home = tempfile.mkdtemp(prefix="xparl-bench-")
    os.environ["XPARL_HOME"] = home
    with background_load(args.background_load):
        data_plane_table = data_plane(args.quick, args.rounds)
    if args.background_load:
        data_plane_table[2] += f" {args.background_load} busy-loop processes ran beside it."
    if args.data_plane_only:
        print("\n".join(data_plane_table))
        if args.output != parser.get_default("output"):  # the full table lives in results.md
            body = "\n".join(data_plane_table[2:])
            Path(args.output).write_text(
                report_header("The call path against raw ZeroMQ") + body + "\n"
            )
        return
    security_rows = security_costs(args.quick, args.rounds)
    security_table = [
        "## The cost of authentication and encryption",
        "",
        "Each cell is the median over rounds in which the three modes took turns; in "
        "brackets the ratio to `--insecure` (no authentication).",
        "",
        "| figure | `--insecure` | auth (default) | auth + encryption (`--encrypt`) |",
        "|---|---|---|---|",
        *(f"| {' | '.join(row)} |" for row in security_rows),
    ]
    if args.security_only:
        print("\n".join(security_table))
        return
    rows: list[tuple[str, str, str, str]] = []

    import parl
    import parl.remote
    from parl.remote.cluster import LocalCluster

    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import parl"], check=True)
    import_parl = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare_python = time.perf_counter() - start
    rows.append(
        (
            "`import parl` (fresh interpreter)",
            f"{import_parl:.3f} s",
            f"bare python: {bare_python:.3f} s",
            "≤ 0.3 s",
        )
    )

    # xparl start -> first actor, with the CLI in a subprocess.
    port = free_port()
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "parl.remote.cli", "start", "--port", str(port), "--cpu_num", "8"],
        check=True,
        capture_output=True,
    )
    Bench = make_actor_class()
    parl.connect(f"127.0.0.1:{port}")
    first = Bench()
    first.noop()
    start_to_actor = time.perf_counter() - start
    rows.append(("`xparl start` → first actor returns", f"{start_to_actor:.2f} s", "", "≤ 3 s"))
    del first
    cluster = next(c for c in parl.remote.cluster.recorded_clusters() if c.port == port)
    cluster.wait_for_jobs(8, 30)
    time.sleep(1.0)  # let the pool settle before measuring memory
    gib, count = rss_of_tree([p["pid"] for p in cluster.processes()])
    rows.append(
        (
            "idle `--cpu_num 8` cluster resident memory",
            f"{gib:.2f} GiB ({count} procs)",
            "",
            "≤ 0.5 GiB",
        )
    )

    start = time.perf_counter()
    eight = [Bench() for _ in range(8)]
    create8 = time.perf_counter() - start
    rows.append(("8 actors created (warm pool)", f"{create8:.3f} s", "", "≤ 0.1 s"))

    actor = eight[0]
    median, p99 = latency(actor, reps)
    empty = np.zeros(0, np.uint8)
    zmq_small = pyzmq_echo_seconds(empty, reps)
    rows.append(
        (
            "trivial call round trip",
            f"median {median * 1e6:.0f} µs, p99 {p99 * 1e6:.0f} µs",
            f"pyzmq echo: {zmq_small * 1e6:.0f} µs",
            "median ≤ 100 µs, p99 ≤ 1 ms",
        )
    )

    for label, nbytes in (("1 KiB", 1024), ("1 MiB", 2**20), ("16 MiB", 16 * 2**20)):
        array = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)
        n = big_reps if nbytes >= 2**20 else reps // 3
        ours = echo_seconds(actor, array, n)
        base = pyzmq_echo_seconds(array, n)
        rate = 2 * nbytes / ours / 1e9
        goal = "≥ 1 GB/s and ≤ 2× pyzmq" if nbytes == 16 * 2**20 else ""
        rows.append(
            (
                f"{label} float32 array echo",
                f"{ours * 1e3:.2f} ms ({rate:.2f} GB/s)",
                f"pyzmq: {base * 1e3:.2f} ms ({ours / base:.2f}×)",
                goal,
            )
        )

    duration = 1.0 if args.quick else 3.0
    rate = calls_per_second(eight[:4], duration)
    rows.append(("calls/s, 4 actors × 4 threads", f"{rate:,.0f}", "", "≥ 10,000"))
    del eight, actor
    parl.remote.disconnect()
    subprocess.run(
        [sys.executable, "-m", "parl.remote.cli", "stop", "--port", str(port)],
        check=True,
        capture_output=True,
    )

    # GIL demo: 5 pure-Python loops, serial vs 5 actors driven from 5 threads.
    n = 1_000_000 if args.quick else 3_000_000
    start = time.perf_counter()
    for _ in range(5):
        spin(n)
    serial = time.perf_counter() - start
    demo = LocalCluster.start(5)
    parl.connect(demo.address)
    actors = [Bench() for _ in range(5)]
    for a in actors:
        a.noop()
    start = time.perf_counter()
    threads = [threading.Thread(target=a.spin, args=(n,)) for a in actors]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    parallel = time.perf_counter() - start
    rows.append(
        (
            "GIL demo: 5 loops, 5 threads over 5 actors",
            f"{serial / parallel:.2f}× ({parallel:.2f} s)",
            f"serial: {serial:.2f} s",
            f"≥ 1.9× on 2 idle cores ({os.cpu_count()} here)",
        )
    )
    del actors
    parl.remote.disconnect()
    demo.stop()

    table = ["| figure | parl-remote | baseline (same run) | goal |", "|---|---|---|---|"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    header = [
        "# parl-remote benchmark results",
        "",
        f"- command: `python -m benchmarks.remote.bench_remote{' --quick' if args.quick else ''}`",
        f"- commit: `{commit()}`",
        f"- machine: {machine()}, pyzmq {zmq.__version__}",
        "",
    ]
    text = "\n".join([*header, *table, "", *data_plane_table, "", *security_table]) + "\n"
    print(text)
    Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
