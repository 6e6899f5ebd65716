"""Run one benchmark over several seeds: ``python -m benchmarks.run <ALGO> <ENV> [--seeds 0 1 2]``.

A benchmark is a settings file, ``benchmarks/configs/<ALGO>-<ENV>.yaml``, holding fields of an
example's ``Args``. Each seed runs the example as a user would, from the command line
(``python examples/<EXAMPLE>/train.py --config <file> --seed <seed>``), and its
``result.json`` joins ``benchmarks/results/<ALGO>-<ENV>.json`` (the one results schema,
:mod:`parl.utils.results`; a rerun of a seed replaces it). The Markdown table and the learning
curves (``.md``, ``.png``) are written from that file. A run passes when an evaluation reached
the target. ``--variant V`` runs a second benchmark on the same env,
``<ALGO>-<ENV>-V.yaml`` (e.g. an offline dataset of another kind), into ``<ALGO>-<ENV>-V.json``.
``nox -s bench -- <ALGO> <ENV>`` runs this.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from parl.utils.results import Benchmark, BenchmarkRun, load_results, plot_curves, save_results

import yaml

from benchmarks._report import ROOT, commit, machine, markdown_table

CONFIGS = ROOT / "benchmarks" / "configs"
RESULTS = ROOT / "benchmarks" / "results"
#: The example script that trains each benchmarked algorithm.
EXAMPLES = {
    "QuickStart": "QuickStart",
    "PPO": "PPO",
    "DQN": "DQN",
    "DDQN": "DQN",
    "A2C": "A2C",
    "SAC": "SAC",
    "OAC": "SAC",
    "TD3": "SAC",
    "DDPG": "SAC",
    "IMPALA": "IMPALA",
    "MADDPG": "MADDPG",
    "QMIX": "QMIX",
    "MAPPO": "MAPPO",
    "IPPO": "MAPPO",
    "COMA": "COMA",
    "ES": "ES",
    "CMAES": "ES",
    "GA": "ES",
    "CQL": "CQL",
    "IQL": "CQL",
    "BC": "CQL",
    "DT": "DT",
}


def config_path(algo: str, env_id: str) -> Path:
    """The settings file of a benchmark; a clear error lists the ones there are."""
    path = CONFIGS / f"{algo}-{env_id}.yaml"
    if algo not in EXAMPLES or not path.is_file():
        known = ", ".join(sorted(p.stem for p in CONFIGS.glob("*.yaml")))
        raise SystemExit(f"no benchmark {algo} on {env_id!r}; known: {known}")
    return path


def run_seed(algo: str, config: Path, seed: int) -> BenchmarkRun:
    """Train one seed through the example's command line; return its figures and provenance."""
    script = Path("examples") / EXAMPLES[algo] / "train.py"
    code = commit()  # the code that trains, not the tree when the run ends
    with tempfile.TemporaryDirectory(prefix=f"bench-{algo}-") as logdir:
        command = [sys.executable, str(script), "--config", str(config.relative_to(ROOT))]
        command += ["--seed", str(seed), "--logdir", logdir]
        subprocess.run(command, cwd=ROOT, check=True)
        figures = json.loads((Path(logdir) / "result.json").read_text())
    shown = " ".join(["python", *command[1:-2]])
    return BenchmarkRun(**figures, command=shown, commit=code, machine=machine())


def write_report(algo: str, env_id: str, benchmark: Benchmark, name: str | None = None) -> Path:
    """Write the results table (``.md``) and learning curves (``.png``) of ``<algo>-<name>``
    (``name`` defaults to ``env_id``); return the table."""
    name = name or env_id
    stem = RESULTS / f"{algo}-{name}"
    curves = {f"seed {run.seed}": run.evals for run in benchmark.runs if run.evals}
    if curves:
        plot_curves(f"{algo} {env_id}", curves, stem.with_suffix(".png"), benchmark.runs[0].target)
    rows = [
        [
            run.seed,
            run.env_steps,
            f"{run.wall_s:.0f}",
            f"{run.sps:.0f}",
            "not reached" if run.first_target_step is None else run.first_target_step,
            "n/a" if run.final_eval_return is None else f"{run.final_eval_return:.1f}",
            "n/a" if run.best_eval_return is None else f"{run.best_eval_return:.1f}",
        ]
        for run in benchmark.runs
    ]
    header = ["seed", "env steps", "wall s", "env steps/s", "first eval >= target"]
    header += ["final eval", "best eval"]
    lines = [f"# {algo} on {name}", ""]
    lines += [f"- seed {r.seed}: `{r.command}` at `{r.commit}`" for r in benchmark.runs]
    lines += [f"- machine: {benchmark.runs[-1].machine}"]
    lines += [f"- target: mean greedy return >= {benchmark.runs[0].target}"]
    lines += [f"- config: `{json.dumps(benchmark.config)}`", "", markdown_table(header, rows), ""]
    if curves:
        lines += [f"![curves]({stem.name}.png)", ""]
    stem.with_suffix(".md").write_text("\n".join(lines))
    return stem.with_suffix(".md")


def record(
    algo: str,
    env_id: str,
    settings: dict[str, Any],
    runs: list[BenchmarkRun],
    name: str | None = None,
) -> None:
    """Merge ``runs`` into ``<algo>-<name>.json`` (``name`` defaults to ``env_id``; a rerun of
    a seed replaces it) and write the report."""
    name = name or env_id
    path = RESULTS / f"{algo}-{name}.json"
    kept = load_results(path)[env_id].runs if path.exists() else []
    fresh = {run.seed for run in runs}
    merged = sorted([r for r in kept if r.seed not in fresh] + runs, key=lambda r: r.seed)
    benchmark = Benchmark(algo=algo, config=settings, runs=merged)
    save_results({env_id: benchmark}, path)
    print(f"wrote {path} and {write_report(algo, env_id, benchmark, name)}")


def main(argv: list[str] | None = None) -> int:
    """Run the seeds, merge them into the results file, write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algo", help=f"one of {', '.join(EXAMPLES)}")
    parser.add_argument("env", help="a gymnasium id or particle scenario with a settings file")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument(
        "--variant",
        help="a second benchmark on the same env: <ALGO>-<ENV>-<VARIANT>.yaml (e.g. medium, an "
        "offline dataset), with results of that name",
    )
    args = parser.parse_args(argv)
    name = f"{args.env}-{args.variant}" if args.variant else args.env
    config = config_path(args.algo, name)
    settings = yaml.safe_load(config.read_text())
    runs = [run_seed(args.algo, config, seed) for seed in args.seeds]
    record(args.algo, args.env, settings, runs, name)
    return 0 if all(run.reached_target for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
