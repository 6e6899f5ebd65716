"""Throughput of the IMPALA system: env steps/s with 1, 2 and 4 remote actors vs one process.

Run ``python -m benchmarks.impala.throughput [--env CartPole-v1] [--steps 30000]`` from the
repository root. Every configuration trains the same algorithm with the example's settings for
the same number of env steps, one after the other in this one run, without evaluation; the
table gives the steady env steps per second (after the first learn step, so the actors' start
is left out), the ratio to the single process (``--num-actors 0``: the same actor code stepped
in the learner's thread), the learner's busy fraction, its mean queue depth and the policy lag.
Results go to ``benchmarks/impala/throughput-<env>.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from parl.utils import load_config

from benchmarks._report import ROOT, header, load_example, markdown_table

HERE = Path(__file__).resolve().parent
_example = load_example("IMPALA")


def settings_of(env_id: str) -> Any:
    """The benchmark's settings for ``env_id`` (its YAML file), else the example's defaults."""
    path = ROOT / "benchmarks" / "configs" / f"IMPALA-{env_id}.yaml"
    if path.is_file():
        return load_config(_example.Args, path)
    return _example.Args(env_id=env_id)


def measure(env_id: str, actors: int, steps: int, seed: int, **overrides: Any) -> dict[str, Any]:
    import parl.remote

    with tempfile.TemporaryDirectory(prefix="impala-speed-") as logdir:
        args = dataclasses.replace(
            settings_of(env_id),
            seed=seed,
            logdir=logdir,
            num_actors=actors,
            total_steps=steps,
            eval_every=0,
            **overrides,
        )
        result = _example.train(args)
    parl.remote.disconnect()  # the next configuration gets a cluster of its own size
    figures = {"env_steps": result.env_steps, "wall_s": result.wall_s}
    return figures | {"sps": result.extra["steady_sps"], **result.extra}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--actors", nargs="+", type=int, default=[0, 1, 2, 4])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--envs-per-actor", type=int, help="override the example's setting")
    parser.add_argument("--batches-per-learn", type=int, help="override the example's setting")
    args = parser.parse_args()
    overrides = {
        key: value
        for key, value in {
            "envs_per_actor": args.envs_per_actor,
            "batches_per_learn": args.batches_per_learn,
        }.items()
        if value is not None
    }
    results = {}
    for actors in args.actors:
        results[actors] = measure(args.env, actors, args.steps, args.seed, **overrides)
        print(actors, f"{results[actors]['sps']:.0f}", flush=True)
    base = results.get(0)
    rows = []
    for actors, r in results.items():
        ratio = f"{r['sps'] / base['sps']:.2f}x" if base else "-"
        rows.append(
            [
                actors or "single process",
                r["env_steps"],
                f"{r['wall_s']:.1f}",
                f"{r['sps']:.0f}",
                ratio,
                f"{r['utilisation']:.0%}",
            ]
        )
    table = markdown_table(
        [
            "actors",
            "env steps",
            "wall s (with start-up)",
            "steady env steps/s",
            "vs single process",
            "learner busy",
        ],
        rows,
    )
    settings = dataclasses.replace(settings_of(args.env), **overrides)
    out = HERE / f"throughput-{args.env}.md"
    out.write_text(
        header(f"IMPALA throughput on {args.env}")
        + f"- seed: {args.seed}; settings: envs_per_actor={settings.envs_per_actor}, "
        f"sample_batch_steps={settings.sample_batch_steps}, "
        f"batches_per_learn={settings.batches_per_learn}, queue_size={settings.queue_size}\n\n"
        + table
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
