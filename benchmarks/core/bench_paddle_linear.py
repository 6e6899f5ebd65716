"""What ``parl.core.paddle.nn.Linear`` saves: a DQN learn step and an acting forward on paddle,
with paddle's own ``Linear.forward`` against ours (the kernel called directly).

The networks are the speed benchmark's (``benchmarks/sb3_speed.py``: CartPole, 256-256, batch
64). Both sides run in one process on the same model, in alternating rounds, timed in CPU
seconds of this process (``time.process_time``), so load from other programs on a shared
machine weighs less than in wall time.

Run: ``OMP_NUM_THREADS=1 python -m benchmarks.core.bench_paddle_linear`` (writes
``benchmarks/core/paddle-linear-results.md``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import parl
from parl.core.paddle import nn

import numpy as np
import paddle

from benchmarks._report import header, markdown_table
from parl_algos_dqn import DQN, QNetwork

RESULTS = Path(__file__).with_name("paddle-linear-results.md")


def _rounds(
    step: Callable[[], object], calls: int, repeats: int, swap: Callable[[bool], None]
) -> tuple[float, float]:
    """Median CPU µs per call of ``step`` with paddle's forward and with ours, alternating."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeats):
        for direct in (False, True):
            swap(direct)
            for _ in range(20):
                step()
            start = time.process_time()
            for _ in range(calls):
                step()
            times[direct].append((time.process_time() - start) / calls * 1e6)
    return statistics.median(times[False]), statistics.median(times[True])


def measure(calls: int, repeats: int) -> list[tuple[str, float, float]]:
    ours = nn.Linear.forward

    def swap(direct: bool) -> None:
        nn.Linear.forward = ours if direct else paddle.nn.Linear.forward  # type: ignore[method-assign]

    parl.set_seed(0, backend="paddle")
    alg = DQN(QNetwork(4, 2, (256, 256), backend="paddle"), gamma=0.99, lr=1.5e-3)
    rng = np.random.default_rng(0)
    batch = [
        paddle.to_tensor(rng.random((64, 4), dtype=np.float32)),
        paddle.to_tensor(rng.integers(0, 2, 64)),
        paddle.to_tensor(rng.random(64, dtype=np.float32)),
        paddle.to_tensor(rng.random((64, 4), dtype=np.float32)),
        paddle.zeros([64]),
    ]
    obs = paddle.to_tensor(rng.random((4, 4), dtype=np.float32))
    calls_timed = {
        "DQN learn step (batch 64)": lambda: alg.learn(*batch),
        "acting forward (4 envs)": lambda: alg.predict(obs),
    }
    try:
        return [(name, *_rounds(call, calls, repeats, swap)) for name, call in calls_timed.items()]
    finally:
        swap(True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    rows = measure(args.calls, args.repeats)
    table = markdown_table(
        ["call", "paddle's Linear", "ours", "paddle's / ours"],
        [[name, f"{old:.0f}", f"{new:.0f}", f"{old / new:.2f}×"] for name, old, new in rows],
    )
    title = "paddle's Linear.forward against parl.core.paddle.nn.Linear's (CPU µs per call)"
    text = header(title) + table + "\n"
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
