"""What attaching to the machine's noise table costs, against building a private one.

Run ``python -m benchmarks.es.noise_attach [--size 25000000] [--repeats 3]``. A process that
finds the machine's segment checks that its numbers are the seed's by regenerating them in
blocks (a digest would only prove nobody changed them since they were written), so attaching
costs about the CPU time of building the table; what it saves is the memory (4 bytes a number
per process). Both are timed in the same run, best of ``--repeats``, and printed with their
ratio.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from benchmarks._report import command, commit, machine
from parl_algos_es import noise


def best_of(repeats: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=25_000_000, help="numbers in the table")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    seed = 90_000 + os.getpid()  # a segment no other run uses
    made = noise._create_segment(args.size, seed)
    if made is None:
        raise SystemExit("could not create the segment (no /dev/shm?)")
    try:
        attach = best_of(args.repeats, lambda: noise._attach_segment(args.size, seed, 1.0))
        private = best_of(args.repeats, lambda: noise._generate(args.size, seed))
    finally:
        (noise._SHM_DIR / noise._segment_name(args.size, seed)).unlink(missing_ok=True)
    print(f"command: {command()}\ncommit: {commit()}\nmachine: {machine()}")
    print(f"load (1 min): {os.getloadavg()[0]:.1f}")
    print(f"attach, numbers checked: {attach:.3f} s")
    print(f"private table built:     {private:.3f} s")
    print(f"attach / private:        {attach / private:.2f}")


if __name__ == "__main__":
    main()
