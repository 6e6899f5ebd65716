"""Throughput of the ES harness: env steps/s with 1, 2, 4 and 8 actors on xparl and on Ray.

Run ``python -m benchmarks.es.throughput [--generations 2] [--actors 1 2 4 8]`` from the
repository root (``pip install "./parl-algos-es[mujoco]" "parl-remote[ray]"``). Every
configuration runs the same synchronous ES search on HalfCheetah-v5 (episodes of exactly 1,000
steps: the task never ends early), with the settings of
``benchmarks/configs/ES-HalfCheetah-v5.yaml``
but ``--population`` candidates, for ``--generations`` generations after one warm-up generation
(which starts the actors and is left out), one configuration after the other in this one run:

- one process: ``num_actors=0``, the same ES evaluating in the learner's process (the baseline);
- xparl: a real cluster, ``xparl start --port <free> --cpu_num 8`` on 127.0.0.1, started here
  and stopped by pid at the end;
- Ray: a local Ray started here with 8 CPUs (``ray.init(num_cpus=8)``), ``address="ray"``.

The table gives env steps per second, the ratio to one process, the learner's share of the wall
time (asking, telling, merging the observation statistics), and the bytes per generation the
learner sends (records and episode seeds; the solution, once per actor and generation) and
receives (returns, step counts and observation statistics), pickled with protocol 5, the
transport's own framing not counted. Results go to ``benchmarks/es/throughput-HalfCheetah-v5.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

import parl
import parl.remote

import cloudpickle
import yaml

from benchmarks._report import ROOT, header, load_example, markdown_table
from benchmarks.es.cluster import MeasuredHarness, xparl_cluster

HERE = Path(__file__).resolve().parent
CONFIG = ROOT / "benchmarks" / "configs" / "ES-HalfCheetah-v5.yaml"
_example = load_example("ES")
# The actors build their agent with the example's functions: send them by value, as cloudpickle
# does for a script's own (this module name is not importable in the cluster's jobs).
cloudpickle.register_pickle_by_value(_example)


def measure(args: Any, actors: int, generations: int, address: str | None) -> dict[str, float]:
    """Run one configuration; return its figures per measured generation."""
    parl.set_seed(args.seed)  # the same initial policy, so every configuration plays alike
    spaces = _example.env_spaces(args.env_id)
    make_agent = partial(_example.build_agent, args, spaces, args.normalize_observations)
    agent = make_agent()
    harness = MeasuredHarness(
        agent, make_agent, args.env_id, num_actors=actors, address=address, seed=args.seed
    )
    try:
        harness.run_generation()  # starts the actors
        harness.reset_counts()
        start = time.perf_counter()
        results = [harness.run_generation() for _ in range(generations)]
        wall_s = time.perf_counter() - start
    finally:
        harness.close()
        if actors:
            parl.remote.disconnect()
    steps = sum(r.env_steps for r in results)
    return {
        "env_steps": steps,
        "sps": steps / wall_s,
        "learner_share": sum(r.learner_s for r in results) / sum(r.wall_s for r in results),
        "sent_records": harness.bytes_records / generations,
        "sent_solution": harness.bytes_solution / generations,
        "received": harness.bytes_received / generations,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--actors", nargs="+", type=int, default=[1, 2, 4, 8])
    parser.add_argument("--population", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    settings = yaml.safe_load(CONFIG.read_text())
    fields = {f.name for f in dataclasses.fields(_example.Args)}
    args = _example.Args(**{k: (tuple(v) if isinstance(v, list) else v)
                            for k, v in settings.items() if k in fields})  # fmt: skip
    args = dataclasses.replace(
        args, population_size=options.population, seed=options.seed, noise_table_size=5_000_000
    )
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    results: dict[tuple[str, int], dict[str, float]] = {}
    results[("one process", 0)] = measure(args, 0, options.generations, None)
    print("one process", results[("one process", 0)], flush=True)
    with xparl_cluster(cpu_num=max(options.actors)) as cluster:
        for n in options.actors:
            results[("xparl", n)] = measure(args, n, options.generations, cluster.address)
            print("xparl", n, results[("xparl", n)], flush=True)
    import ray

    ray.init(num_cpus=max(options.actors), include_dashboard=False, log_to_driver=False)
    try:
        for n in options.actors:
            results[("Ray", n)] = measure(args, n, options.generations, "ray")
            print("Ray", n, results[("Ray", n)], flush=True)
    finally:
        ray.shutdown()

    single = results[("one process", 0)]["sps"]
    rows = [
        [
            backend,
            actors or "-",
            r["env_steps"],
            f"{r['sps']:.0f}",
            f"{r['sps'] / single:.2f}x",
            f"{r['learner_share']:.2%}",
            f"{r['sent_records']:.0f}",
            f"{r['sent_solution']:.0f}",
            f"{r['received']:.0f}",
        ]
        for (backend, actors), r in results.items()
    ]
    table = markdown_table(
        [
            "backend",
            "actors",
            "env steps",
            "env steps/s",
            "vs one process",
            "learner share",
            "bytes sent / generation: records",
            "solution",
            "bytes received / generation",
        ],
        rows,
    )
    parameters = _example.build_agent(args, _example.env_spaces(args.env_id)).alg.flat.size
    out = HERE / "throughput-HalfCheetah-v5.md"
    out.write_text(
        header("ES harness throughput on HalfCheetah-v5")
        + f"- ES, linear policy ({parameters} parameters) with observation normalisation, "
        f"population {args.population_size} (1,000-step episodes), {options.generations} "
        f"generations measured after one warm-up generation, seed {options.seed}\n\n" + table + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
