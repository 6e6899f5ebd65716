"""The first actor after a master restart: how long a client waits for it.

Each round, on a 2-CPU cluster with the default timeouts (as a user runs it): an actor is
created and released, the master is killed (SIGKILL), and, once the client has noticed
(heartbeat timeout), a master is started again on the same port. Two figures: from that start
until the first actor answers (the worker re-registers, the client says hello again), and from
the kill until then. ``--old DIR`` runs the same rounds on another checkout (e.g.
``git worktree add /tmp/old 8673b88``), its ``src`` folders first on ``PYTHONPATH`` in a
process of its own, alternating with this one so machine load hits both alike.

Run: ``python -m benchmarks.remote.master_restart [--rounds 8] [--old DIR]`` (writes
``benchmarks/remote/master_restart.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._report import header

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "master_restart.md"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rounds(count: int) -> list[dict[str, float]]:
    """Run ``count`` kill-and-restart rounds in this process; one dict of seconds per round."""
    import parl
    import parl.remote
    from parl.remote import MasterLostError, ResourceError
    from parl.remote.cluster import LocalCluster

    @parl.remote_class
    class Echo:
        def echo(self, value: object) -> object:
            return value

    port = _free_port()
    first = LocalCluster.start(2, port=port)
    current = first
    client = parl.remote.connect(first.address)
    found = []
    try:
        for _ in range(count):
            actor = Echo()
            actor.echo(1)
            del actor
            os.kill(current.master["pid"], signal.SIGKILL)
            killed = time.monotonic()
            while not client.master_lost and time.monotonic() - killed < 30:
                time.sleep(0.01)
            current = LocalCluster.start(0, port=port)
            up = time.monotonic()
            while time.monotonic() - up < 120:
                try:
                    Echo().echo(2)
                    break
                except (MasterLostError, ResourceError):
                    time.sleep(0.01)
            done = time.monotonic()
            found.append({"start_to_actor": done - up, "kill_to_actor": done - killed})
    finally:
        parl.remote.disconnect()
        current.stop()
        first.stop()
    return found


def measure(count: int, checkout: Path | None) -> list[dict[str, float]]:
    """Run :func:`rounds` in a subprocess, on ``checkout``'s code if given."""
    env = dict(os.environ, XPARL_HOME=tempfile.mkdtemp(prefix="xparl-restart-"))
    if checkout is not None:
        sources = sorted(str(p) for p in checkout.glob("parl-*/src"))
        env["PYTHONPATH"] = os.pathsep.join([*sources, env.get("PYTHONPATH", "")])
    code = (
        "import json; from benchmarks.remote.master_restart import rounds; "
        f"print(json.dumps(rounds({count})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=HERE.parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    return list(json.loads(out.strip().splitlines()[-1]))


def _row(name: str, found: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in found]
    return (
        f"| {name} | {key.replace('_', ' ')} | {statistics.median(values):.3f} s | "
        f"{min(values):.3f}-{max(values):.3f} s |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--old", type=Path, help="a checkout to compare with")
    args = parser.parse_args()
    new: list[dict[str, float]] = []
    old: list[dict[str, float]] = []
    for _ in range(2):  # alternating halves
        new += measure(args.rounds // 2, None)
        if args.old is not None:
            old += measure(args.rounds // 2, args.old)
    table = ["| code | from | median | range |", "|---|---|---|---|"]
    for key in ("start_to_actor", "kill_to_actor"):
        table.append(_row("this checkout", new, key))
        if old:
            table.append(_row(str(args.old), old, key))
    if old:
        ratio = statistics.median(r["start_to_actor"] for r in old) / statistics.median(
            r["start_to_actor"] for r in new
        )
        table.append(f"\nstart to actor, median: the old checkout's is {ratio:.2f}x this one's")
    text = "\n".join(table)
    RESULTS.write_text(header("The first actor after a master restart") + text + "\n")
    print(text)


if __name__ == "__main__":
    main()
