"""The Ray backend's cost: PARL-on-Ray against plain Ray's own API, beside xparl.

Run ``python -m benchmarks.remote.bench_ray [--quick]``. In one run it measures, for xparl
(``parl.connect(address)``), PARL-on-Ray (``parl.connect("ray")``) and plain Ray
(``@ray.remote`` and ``ray.get(actor.method.remote(...))``): the median latency of a trivial
call, the median 16 MiB echo, and trivial calls per second with 4 actors driven by 4 threads
each. PARL-on-Ray and plain Ray share one local Ray and take turns within each round; the
adapter's overhead is their ratio. Results go to ``benchmarks/remote/results_ray.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import header, markdown_table

HERE = Path(__file__).resolve().parent

ACTORS = 4
THREADS_PER_ACTOR = 4
ECHO_BYTES = 16 * 2**20


class Bench:
    """The actor every system runs."""

    def noop(self) -> None:
        return None

    def echo(self, value: object) -> object:
        return value


def median_seconds(call: Callable[[], object], reps: int, warmup: int = 20) -> float:
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def calls_per_second(calls: Sequence[Callable[[], object]], duration: float) -> float:
    """Calls/s with ``THREADS_PER_ACTOR`` threads on each of ``calls`` (one per actor)."""
    counts = [0] * (len(calls) * THREADS_PER_ACTOR)
    stop = threading.Event()

    def drive(call: Callable[[], object], slot: int) -> None:
        while not stop.is_set():
            call()
            counts[slot] += 1

    threads = [
        threading.Thread(target=drive, args=(call, i * THREADS_PER_ACTOR + k))
        for i, call in enumerate(calls)
        for k in range(THREADS_PER_ACTOR)
    ]
    for thread in threads:
        thread.start()
    time.sleep(duration)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(counts) / duration


def measure(
    noops: Sequence[Callable[[], object]], echo: Callable[[Any], object], quick: bool
) -> dict:
    array = np.random.default_rng(0).integers(0, 255, ECHO_BYTES, dtype=np.uint8)
    return {
        "latency": median_seconds(noops[0], 200 if quick else 2000),
        "echo": median_seconds(lambda: echo(array), 5 if quick else 20, warmup=2),
        "rate": calls_per_second(noops, 2.0 if quick else 5.0),
    }


def parl_system(quick: bool) -> dict:
    import parl

    actors = [parl.remote_class(Bench)() for _ in range(ACTORS)]
    return measure([a.noop for a in actors], actors[0].echo, quick)


def plain_ray_system(quick: bool) -> dict:
    import ray

    remote = ray.remote(num_cpus=1)(Bench)
    # Ray types a handle as `ActorHandle[Bench] | type[Bench]`, whose methods have `.remote`
    # only when decorated with `@ray.method`: Bench's plain methods are not.
    actors: list[Any] = [remote.remote() for _ in range(ACTORS)]
    ray.get([a.noop.remote() for a in actors])  # started, as PARL's constructor waits for
    noops = [lambda a=a: ray.get(a.noop.remote()) for a in actors]
    return measure(noops, lambda x: ray.get(actors[0].echo.remote(x)), quick)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--rounds", type=int, default=3, help="turns of PARL-on-Ray / plain Ray")
    parser.add_argument("--output", default=str(HERE / "results_ray.md"))
    args = parser.parse_args()
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray on 127.0.0.1
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    import parl
    import parl.remote
    from parl.remote.cluster import LocalCluster

    import ray

    cluster = LocalCluster.start(ACTORS)
    try:
        parl.connect(cluster.address)
        xparl = parl_system(args.quick)
        parl.remote.disconnect()
    finally:
        cluster.stop()

    start = time.perf_counter()
    ray.init(num_cpus=ACTORS, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - start
    on_ray, plain = [], []
    try:
        for turn in range(args.rounds):
            if turn % 2:  # alternate who goes first
                plain.append(plain_ray_system(args.quick))
            parl.connect("ray")
            on_ray.append(parl_system(args.quick))
            parl.remote.disconnect()
            if not turn % 2:
                plain.append(plain_ray_system(args.quick))
    finally:
        ray.shutdown()

    def med(runs: list[dict], key: str) -> float:
        return statistics.median(run[key] for run in runs)

    figures = [
        ("trivial call latency (median)", "latency", lambda s: f"{s * 1e3:.3f} ms"),
        ("16 MiB echo (median)", "echo", lambda s: f"{s * 1e3:.1f} ms"),
        (f"calls/s, {ACTORS} actors × {THREADS_PER_ACTOR} threads", "rate", lambda r: f"{r:.0f}"),
    ]
    rows = []
    for label, key, fmt in figures:
        parl_ray, ray_own = med(on_ray, key), med(plain, key)
        # Overhead: extra time per call (for a rate, the inverse).
        overhead = parl_ray / ray_own - 1 if key != "rate" else ray_own / parl_ray - 1
        rows.append((label, fmt(xparl[key]), fmt(parl_ray), fmt(ray_own), f"{overhead:+.1%}"))
    text = header("The Ray backend: PARL-on-Ray vs plain Ray, beside xparl") + "\n".join(
        [
            f"Local Ray with {ACTORS} CPUs on 127.0.0.1 (started in {ray_start:.1f} s); xparl: "
            f"an embedded-style cluster of {ACTORS} CPUs. PARL-on-Ray and plain Ray took "
            f"{args.rounds} turns (alternating who went first); medians over the turns. "
            "Overhead = PARL-on-Ray's extra time per call over plain Ray's (the goal: under 20%).",
            "",
            markdown_table(
                ["figure", "xparl", "PARL-on-Ray", "plain Ray", "adapter overhead"], rows
            ),
            "",
        ]
    )
    Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
