"""Soak an xparl cluster: client processes calling their actors back to back, optionally with
the master stopped (SIGSTOP) for a while in the middle.

The issue's two runs::

    python -m benchmarks.remote.soak --clients 2 --seconds 60 --stall-at 27 --stall-for 6
    python -m benchmarks.remote.soak --clients 8 --seconds 600 --churn 30

Every client counts its calls and errors; the RSS and open file descriptors of every process
(master, worker, jobs, clients) are taken once the clients run and again at the end. With
``--churn S`` each client swaps its actor for a new one every S seconds (creation and release
under load). Results are appended to ``benchmarks/remote/soak.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from benchmarks._report import header, markdown_table

HERE = Path(__file__).resolve().parent

# The same client as the stall test's: one definition of "a busy client".
CLIENT = HERE.parent.parent / "parl-remote" / "tests" / "busy_client.py"


def _drain_progress(client: subprocess.Popen[str]) -> None:
    """Keep only the report of a client: its progress lines would fill the pipe."""
    assert client.stdout is not None
    for line in client.stdout:
        if line.startswith("{"):
            client.report = json.loads(line)  # type: ignore[attr-defined]


def sample(pids: dict[str, int]) -> dict[str, tuple[float, int]]:
    """RSS (MiB) and open fds of each process that still runs."""
    found = {}
    for name, pid in pids.items():
        try:
            proc = psutil.Process(pid)
            found[name] = (proc.memory_info().rss / 2**20, proc.num_fds())
        except psutil.NoSuchProcess:
            continue
    return found


def cluster_pids(cluster: object) -> dict[str, int]:
    master = cluster.master["pid"]  # type: ignore[attr-defined]
    worker = psutil.Process(cluster.workers[0]["pid"])  # type: ignore[attr-defined]
    pids = {"master": master, "worker": worker.pid}
    for child in worker.children():
        pids[f"job {child.pid}"] = child.pid
    return pids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--stall-at", type=float, default=None, help="SIGSTOP the master then")
    parser.add_argument("--stall-for", type=float, default=6.0)
    parser.add_argument("--churn", type=float, default=0.0, help="swap actors every S seconds")
    parser.add_argument("--output", default=str(HERE / "soak.md"))
    args = parser.parse_args()
    os.environ["XPARL_HOME"] = tempfile.mkdtemp(prefix="xparl-soak-")
    from parl.remote.cluster import LocalCluster

    cluster = LocalCluster.start(args.clients + 1, detach=True)
    clients = [
        subprocess.Popen(
            [sys.executable, str(CLIENT), cluster.address, str(args.churn)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(args.clients)
    ]
    stalled = ""
    readers = []
    try:
        for client in clients:
            assert client.stdout is not None and client.stdout.readline().strip() == "ready"
            readers.append(threading.Thread(target=_drain_progress, args=(client,), daemon=True))
            readers[-1].start()
        for client in clients:
            assert client.stdin is not None
            client.stdin.write("go\n")
            client.stdin.flush()
        started = time.monotonic()
        time.sleep(min(5.0, args.seconds / 10))
        pids = {**cluster_pids(cluster), **{f"client {c.pid}": c.pid for c in clients}}
        first = sample(pids)
        if args.stall_at is not None:
            time.sleep(max(0.0, started + args.stall_at - time.monotonic()))
            os.kill(cluster.master["pid"], signal.SIGSTOP)
            stop_at = time.monotonic()
            time.sleep(args.stall_for)
            os.kill(cluster.master["pid"], signal.SIGCONT)
            stalled = f"master stopped (SIGSTOP) for {time.monotonic() - stop_at:.1f} s"
            stalled += f" at {stop_at - started:.0f} s"
        time.sleep(max(0.0, started + args.seconds - time.monotonic()))
        last = sample({**pids, **cluster_pids(cluster)})
        elapsed = time.monotonic() - started
        for client in clients:
            assert client.stdin is not None
            client.stdin.close()
        for client, reader in zip(clients, readers, strict=True):
            client.wait(60)
            reader.join(60)
        missing = {"calls": 0, "errors": 1, "by_type": {"no report": 1}, "created": 0}
        reports = [getattr(c, "report", missing) for c in clients]
        status = cluster.query()
    finally:
        for client in clients:
            if client.poll() is None:
                client.kill()
        cluster.stop()
    write(args, reports, first, last, elapsed, stalled, status)


def write(args, reports, first, last, elapsed, stalled, status) -> None:  # type: ignore[no-untyped-def]
    calls = sum(r["calls"] for r in reports)
    errors = sum(r["errors"] for r in reports)
    rows = []
    for name in {**first, **last}:
        before, after = first.get(name), last.get(name)
        rss = " → ".join(f"{x[0]:.1f}" if x else "-" for x in (before, after))
        fds = " → ".join(f"{x[1]}" if x else "-" for x in (before, after))
        rows.append((name, rss, fds))
    clients = [
        (
            i,
            f"{r['calls']:,}",
            r["errors"],
            ", ".join(f"{k}: {v}" for k, v in r["by_type"].items()) or "",
            r["created"],
        )
        for i, r in enumerate(reports)
    ]
    text = header(f"xparl soak: {args.clients} clients, {args.seconds:g} s")
    text += (
        f"- {calls:,} calls, **{errors} errors**, {calls / elapsed:,.0f} calls/s over "
        f"{elapsed:.0f} s; {stalled or 'no stall'}; churn every {args.churn:g} s\n"
        f"- after the run: {len(status['workers'])} worker(s), {len(status['lost_workers'])} "
        f"lost, {status['cpus_total']} CPUs, {status['bad_messages']} malformed messages, "
        f"{status['refused_connections']} failed handshakes\n\n"
    )
    text += markdown_table(["client", "calls", "errors", "error types", "actors swapped"], clients)
    text += "\n\nRSS (MiB) and open fds, once the clients ran and at the end (-: not running;"
    text += " jobs that were swapped out end, new ones start):\n\n"
    text += markdown_table(["process", "RSS MiB", "fds"], rows) + "\n\n"
    print(text)
    with open(args.output, "a") as handle:
        handle.write(text)


if __name__ == "__main__":
    main()
