"""Scale of the ES harness: 16, 32 and 64 actors (jobs) on one machine's xparl cluster.

Run ``python -m benchmarks.es.scale [--actors 16 32 64] [--generations 5]`` from the repository
root. It starts a real cluster (``xparl start --port <free> --cpu_num <most actors>`` on
127.0.0.1, stopped by pid at the end), first measures one actor's job (RSS and USS, after it
built its agent and env) and starts only as many actors as their USS fits in the memory this
machine has available, less ``--reserve-gib`` for everything else on it. The work is small
on purpose: ES over the 20 parameters of a linear policy on ``parl.testing.IdentityEnv``
(10-step episodes), one antithetic pair per actor and generation, a noise table of 1M numbers
(4 MB) per job, so that what is measured is the harness: broadcasting the solution, handing
out and collecting batches, telling.

Per configuration, over ``--generations`` generations after a warm-up one (which starts the
actors): the generation's wall time; the busiest actor's own work, the time it spent on its
batch by its own clock (``GenerationResult.actor_s``: from receiving the call to answering, so
it includes waiting for a core); the overhead, the difference: what the harness adds beyond
that actor's work (broadcasting, handing out, collecting, asking and telling); the learner's RSS
after the run and its peak. Results go to ``benchmarks/es/scale.md``.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from functools import partial
from pathlib import Path

import parl
import parl.remote
from parl.testing import IdentityEnv, LinearModel

import gymnasium as gym
import psutil

from benchmarks._report import header, markdown_table
from benchmarks.es.cluster import xparl_cluster
from parl_algos_es import ES, ESAgent, EvolutionHarness
from parl_algos_es.harness import GenerationTimeoutError

HERE = Path(__file__).resolve().parent
MIB = 2**20
MAKE_ENV = partial(IdentityEnv, 4, episode_length=10)


def make_agent(population: int) -> ESAgent:
    """The learner's and every actor's agent (sent by value: this is ``__main__``)."""
    es = ES(LinearModel(4, 4), seed=0, noise_table_size=1_000_000, population_size=population)
    return ESAgent(es, gym.spaces.Discrete(4))


def memory_mib(pid: int) -> tuple[float, float]:
    """RSS (shared library pages counted in full) and USS (the pages only this process holds:
    what one more job adds) of a process, in MiB."""
    info = psutil.Process(pid).memory_full_info()
    return info.rss / MIB, info.uss / MIB


def run(
    actors: int, generations: int, address: str | None, start_s: float = 600.0
) -> dict[str, float]:
    """Generations of one pair per actor; their mean wall time and the learner's memory.
    ``start_s`` bounds the first generation, which starts the actors."""
    parl.set_seed(0)
    factory = partial(make_agent, 2 * max(actors, 1))
    harness = EvolutionHarness(
        factory(), factory, MAKE_ENV, num_actors=actors, records_per_call=2, address=address,
        generation_timeout_s=start_s,
    )  # fmt: skip
    try:
        harness.run_generation()  # starts the actors
        harness.timeout_s = 60.0
        jobs = [memory_mib(pid) for pid in harness.actor_pids.values()]
        start = time.perf_counter()
        results = [harness.run_generation() for _ in range(generations)]
        wall_s = (time.perf_counter() - start) / generations
    finally:
        harness.close()
        if actors:
            parl.remote.disconnect()
    return {
        "wall_ms": 1000 * wall_s,
        "learner_ms": 1000 * sum(r.learner_s for r in results) / generations,
        "actor_ms": 1000 * sum(r.actor_s for r in results) / generations,
        "contributors": len(set().union(*(r.contributors for r in results))),
        "job_rss_mib": max((rss for rss, _ in jobs), default=0.0),
        "job_uss_mib": max((uss for _, uss in jobs), default=0.0),
        "learner_rss_mib": memory_mib(os.getpid())[0],
        "learner_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", nargs="+", type=int, default=[16, 32, 64])
    parser.add_argument("--generations", type=int, default=20)
    parser.add_argument("--reserve-gib", type=float, default=6.0)
    parser.add_argument("--start-timeout-s", type=float, default=1800.0)
    options = parser.parse_args()
    cores = os.cpu_count() or 1
    rows, notes = [], []
    local = run(0, options.generations, None)  # the same ES in one process
    notes.append(
        f"- in one process (no cluster): {local['wall_ms']:.1f} ms a generation of one pair, "
        f"{local['learner_rss_mib']:.0f} MiB RSS"
    )
    with xparl_cluster(cpu_num=max(options.actors)) as cluster:
        one = run(1, 1, cluster.address)
        available = psutil.virtual_memory().available / MIB - 1024 * options.reserve_gib
        fit = int(available // one["job_uss_mib"])
        notes.append(
            f"- one actor's job: {one['job_rss_mib']:.0f} MiB RSS, of which "
            f"{one['job_uss_mib']:.0f} MiB its own (USS; the rest is paddle's and numpy's "
            f"shared libraries); {available / 1024:.1f} GiB available after a "
            f"{options.reserve_gib:g} GiB reserve for the rest of the machine: room for {fit} "
            "actors"
        )
        for actors in options.actors:
            if actors > fit:
                notes.append(f"- {actors} actors: not run, {fit} fit in memory")
                continue
            try:
                r = run(actors, options.generations, cluster.address, options.start_timeout_s)
            except GenerationTimeoutError as error:
                notes.append(f"- {actors} actors: not measured, {error}")
                continue
            own = r["actor_ms"]
            rows.append(
                [
                    actors,
                    r["contributors"],
                    f"{r['wall_ms']:.0f}",
                    f"{own:.0f}",
                    f"{r['wall_ms'] - own:.0f}",
                    f"{r['learner_ms']:.1f}",
                    f"{r['job_rss_mib']:.0f} / {r['job_uss_mib']:.0f}",
                    f"{r['learner_rss_mib']:.0f}",
                    f"{r['learner_peak_mib']:.0f}",
                ]
            )
            print(*rows[-1], flush=True)
    table = markdown_table(
        [
            "actors",
            "actors that answered",
            "generation ms",
            "busiest actor's own work ms",
            "overhead ms",
            "learner ms (ask, tell)",
            "largest job RSS / USS MiB",
            "learner RSS MiB",
            "learner peak RSS MiB",
        ],
        rows,
    )
    out = HERE / "scale.md"
    out.write_text(
        header("ES harness on one machine's xparl cluster: 16 to 64 actors")
        + f"- ES over LinearModel(4, 4) (20 parameters) on IdentityEnv (10-step episodes), one "
        f"antithetic pair per actor and generation, {options.generations} generations after a "
        f"warm-up one; {cores} cores shared with other jobs (load average "
        f"{os.getloadavg()[0]:.1f} at the end)\n" + "\n".join(notes) + "\n\n" + table + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
