"""What the one-update-rule interface (``parl.core.ops``) costs, per call and per learn step.

Two figures per framework, each timed in alternating rounds so that load on a shared machine hits
both sides alike:

* per call: ``ops.mean(x, axis=1)`` (the interface) against the framework's own
  ``x.mean(...)`` on a ``[64, 8]`` tensor, and ``self.ops`` lookups;
* per learn step: DQN's ``learn`` written once (this checkout) against the twin the framework had
  before (``--old`` names a checkout of the commit before the change, e.g. made with
  ``git worktree add /tmp/old 8673b88``; its ``src`` folders go first on ``PYTHONPATH`` in a
  subprocess of its own).

Run: ``python -m benchmarks.core.bench_ops --old /tmp/old`` (writes
``benchmarks/core/ops-results.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

from benchmarks._report import ROOT, header

RESULTS = Path(__file__).with_name("ops-results.md")
SOURCES = ("parl-core", "parl-utils", "parl-algos-dqn")

LEARN_PROBE = """
import json, sys, time
import numpy as np
backend, layout = sys.argv[1], sys.argv[2]
import parl
parl.set_seed(0, backend=backend)
if layout == "old" and backend == "torch":
    from parl_algos_dqn.torch import DQN, QNetwork
    model = QNetwork(4, 2, (64, 64))
elif layout == "old":
    from parl_algos_dqn import DQN, QNetwork
    model = QNetwork(4, 2, (64, 64))
else:
    from parl_algos_dqn import DQN, QNetwork
    model = QNetwork(4, 2, (64, 64), backend=backend)
alg = DQN(model, gamma=0.99, lr=1e-3)
rng = np.random.default_rng(0)
batch = (rng.random((64, 4), dtype=np.float32), rng.integers(0, 2, 64),
         rng.random(64, dtype=np.float32), rng.random((64, 4), dtype=np.float32),
         np.zeros(64, dtype=np.float32))
for _ in range(50):
    alg.learn(*batch)
times = []
for _ in range(5):
    start = time.perf_counter()
    for _ in range(200):
        alg.learn(*batch)
    times.append((time.perf_counter() - start) / 200)
print(json.dumps(min(times)))
"""


def learn_step_seconds(backend: str, layout: str, old: Path | None) -> float:
    """Best-of-5 seconds per DQN learn step, in a fresh subprocess of ``layout``'s code."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if layout == "old" and old is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(old / name / "src") for name in SOURCES)
    out = subprocess.run(
        [sys.executable, "-c", LEARN_PROBE, backend, layout],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def per_call(backend: str, rounds: int = 5, calls: int = 20_000) -> dict[str, float]:
    """µs per call of the framework's mean, the interface's, and of an algorithm's ``ops``."""
    from parl.core.ops import ops_of_backend

    ops = ops_of_backend(backend)
    x = ops.to_tensor([[float(i + j) for j in range(8)] for i in range(64)])
    native = (lambda: x.mean(axis=1)) if backend == "paddle" else (lambda: x.mean(dim=1))
    through = lambda: ops.mean(x, axis=1)  # noqa: E731
    lookup = lambda: ops_of_backend(backend)  # noqa: E731
    best = {"native": float("inf"), "ops": float("inf"), "lookup": float("inf")}
    for _ in range(rounds):
        for name, call in (("native", native), ("ops", through), ("lookup", lookup)):
            best[name] = min(best[name], timeit.timeit(call, number=calls) / calls * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="a checkout of the commit before the change")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rows = []
    for backend in ("paddle", "torch"):
        calls = per_call(backend)
        rows.append(
            f"| {backend} | `ops.mean(x, axis=1)` vs `x.mean(...)`, [64, 8] | "
            f"{calls['ops']:.2f} µs vs {calls['native']:.2f} µs "
            f"(+{calls['ops'] - calls['native']:.2f} µs) |"
        )
        rows.append(f"| {backend} | `self.ops` lookup | {calls['lookup']:.3f} µs |")
        if args.old is None:
            continue
        old, new = [], []
        for _ in range(args.repeats):  # alternating, so that load hits both alike
            old.append(learn_step_seconds(backend, "old", args.old))
            new.append(learn_step_seconds(backend, "new", None))
        rows.append(
            f"| {backend} | DQN `learn`, 64-64 MLP, batch 64, OMP_NUM_THREADS=1 (median of "
            f"{args.repeats}) | written once {statistics.median(new) * 1e6:.0f} µs vs twin "
            f"{statistics.median(old) * 1e6:.0f} µs: "
            f"{statistics.median(old) / statistics.median(new):.2f}× the twin's speed |"
        )
    table = ["| framework | what | figure |", "|---|---|---|", *rows]
    RESULTS.write_text(header("The ops interface: cost per call") + "\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
