"""PARL's GIL demo: five CPU-bound loops, run serially, in Python threads, and in xparl actors.

``python docs/examples/gil_demo.py`` prints the wall time of each way and its speed-up over the
serial run, measured in the same run. ``--count`` sets the length of each loop and
``--repeats`` how many rounds time each way (the best time counts).
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable

import parl

LOOPS = 5


def count_up(count: int) -> int:
    """A pure-Python loop: it holds the GIL for as long as it runs."""
    total = 0
    for i in range(count):
        total += i
    return total


@parl.remote_class
class Counter:
    """The same loop in an actor, which lives in a process (and a GIL) of its own."""

    def count_up(self, count: int) -> int:
        return count_up(count)


def in_threads(work: list[Callable[[], object]]) -> None:
    """Run each callable in its own Python thread and wait for all of them."""
    threads = [threading.Thread(target=job) for job in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def best_times(ways: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """The shortest wall time of each way over ``repeats`` rounds, in seconds.

    Each round times every way once, so that a change in the machine's load hits all of them.
    """
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(repeats):
        for name, run in ways.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Time the three ways and print them; return the seconds of each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000_000, help="iterations per loop")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of timings (best counts)")
    args = parser.parse_args(argv)

    parl.connect(cpu_num=LOOPS)  # a local cluster with one CPU slot per loop
    counters = [Counter() for _ in range(LOOPS)]  # five actors, five processes

    ways = {
        "serial": lambda: [count_up(args.count) for _ in range(LOOPS)],
        "threads": lambda: in_threads([lambda: count_up(args.count) for _ in range(LOOPS)]),
        "actors": lambda: in_threads([lambda c=c: c.count_up(args.count) for c in counters]),
    }
    seconds = best_times(ways, args.repeats)
    for way, value in seconds.items():
        print(f"{way:>8}: {value:6.2f} s  ({seconds['serial'] / value:.2f}x the serial speed)")
    return seconds


if __name__ == "__main__":
    main()
