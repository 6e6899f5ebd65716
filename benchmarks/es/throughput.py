"""Throughput of the ES harness: env steps/s with 1, 2 and 4 remote actors vs one process.

Run ``python -m benchmarks.es.throughput [--generations 5] [--actors 0 1 2 4]`` from the
repository root. Every configuration runs the same synchronous ES search (the example's
CartPole-v1 settings and seed, so every configuration plays the same episodes) for
``--generations`` generations after one warm-up generation (which starts the embedded xparl
cluster and the actors, and is left out), one configuration after the other in this one run.
The table gives env steps per second, the ratio to one process (``--num-actors 0``), the
learner's share of the wall time, and the bytes the learner sends per generation: the pickled
size (protocol 5) of every ``evaluate`` call's arguments (records, episode seeds, and the
current solution once per actor and generation), xparl's own framing not counted. It is
measured for the linear policy and for two tanh layers of 64, to show what grows with the
parameters. Results go to ``benchmarks/es/throughput-CartPole-v1.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import time
from functools import partial
from pathlib import Path
from typing import Any

import parl
import parl.remote

import cloudpickle

from benchmarks._report import header, load_example, markdown_table
from parl_algos_es import EvolutionHarness

HERE = Path(__file__).resolve().parent
_example = load_example("ES")
# The actors build their agent with the example's functions: send them by value, as cloudpickle
# does for a script's own (this module name is not importable in the cluster's jobs).
cloudpickle.register_pickle_by_value(_example)


class _CountingActor:
    """Forwards ``evaluate`` to a remote actor, adding its arguments' pickled size to a count."""

    def __init__(self, actor: Any, harness: MeasuredHarness) -> None:
        self.actor, self.harness = actor, harness

    def evaluate(self, *args: Any) -> Any:
        self.harness.bytes_sent += len(pickle.dumps(args, protocol=5))
        return self.actor.evaluate(*args)


class MeasuredHarness(EvolutionHarness):
    """The harness, counting the bytes of the calls it sends to actors."""

    bytes_sent = 0

    def _issue(self, slot: int, batch: Any) -> None:
        actor = self._actors[slot]
        self._actors[slot] = _CountingActor(actor, self)
        try:
            super()._issue(slot, batch)
        finally:
            self._actors[slot] = actor


def measure(args: Any, actors: int, generations: int) -> dict[str, float]:
    """Run one configuration; return its figures per measured generation."""
    parl.set_seed(args.seed)  # the same initial policy, so every configuration plays alike
    make_agent = partial(_example.build_agent, args, _example.env_spaces(args.env_id))
    agent = make_agent()
    harness = MeasuredHarness(agent, make_agent, args.env_id, num_actors=actors, seed=args.seed)
    try:
        harness.run_generation()  # starts the cluster and the actors
        harness.bytes_sent = 0
        start = time.perf_counter()
        results = [harness.run_generation() for _ in range(generations)]
        wall_s = time.perf_counter() - start
    finally:
        harness.close()
        if actors:
            parl.remote.disconnect()  # the next configuration gets a cluster of its own size
    steps = sum(r.env_steps for r in results)
    return {
        "parameters": agent.alg.flat.size,
        "env_steps": steps,
        "sps": steps / wall_s,
        "learner_share": sum(r.learner_s for r in results) / sum(r.wall_s for r in results),
        "bytes_per_generation": harness.bytes_sent / generations,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=5)
    parser.add_argument("--actors", nargs="+", type=int, default=[0, 1, 2, 4])
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    base_args = _example.Args(seed=options.seed, noise_table_size=1_000_000)
    rows = []
    for hidden in [(), (64, 64)]:
        args = dataclasses.replace(base_args, hidden_sizes=hidden)
        results = {n: measure(args, n, options.generations) for n in options.actors}
        single = results.get(0)
        for actors, r in results.items():
            ratio = f"{r['sps'] / single['sps']:.2f}x" if single else "-"
            rows.append(
                [
                    "linear" if not hidden else "64, 64 tanh",
                    r["parameters"],
                    actors or "single process",
                    r["env_steps"],
                    f"{r['sps']:.0f}",
                    ratio,
                    f"{r['learner_share']:.1%}",
                    f"{r['bytes_per_generation']:.0f}",
                ]
            )
            print(*rows[-1], flush=True)
    table = markdown_table(
        [
            "policy",
            "parameters",
            "actors",
            "env steps",
            "env steps/s",
            "vs single process",
            "learner share",
            "bytes sent / generation",
        ],
        rows,
    )
    out = HERE / "throughput-CartPole-v1.md"
    out.write_text(
        header("ES harness throughput on CartPole-v1")
        + f"- ES, population {base_args.population_size}, {options.generations} generations "
        f"measured after one warm-up generation, seed {options.seed}\n\n" + table + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
