"""Every multi-agent algorithm on each particle task, side by side, with its curves.

``python -m benchmarks.multi_agent`` reads every committed
``benchmarks/results/<ALGO>-<task>.json`` whose task is a particle scenario (``simple_*``,
written by ``python -m benchmarks.run <ALGO> <task>``), so an algorithm joins by adding its
results file. It measures a uniformly random and a still (no-op) policy on each task here, over
the same 25-step episodes and team return (the sum of every agent's rewards), and writes
``benchmarks/results/multi-agent.md``, one table per task (each algorithm's seeds, budget and
final greedy return, mean and spread over seeds, and the two baselines), and
``multi-agent-<task>.png``: each algorithm's mean evaluation curve over its seeds with the band
between the lowest and highest seed, and the baselines as lines.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from parl.env.multiagent_env import ParticleEnv, TeamEnv
from parl.utils.results import Benchmark, load_results

import numpy as np

from benchmarks._report import ROOT, header, markdown_table

RESULTS = ROOT / "benchmarks" / "results"
#: Steps per episode of every multi-agent benchmark (PARL's and EPyMARL's MPE time limit).
MAX_CYCLES = 25
#: A policy: each agent's number of actions and a generator in, one action per agent out.
Policy = Callable[[Sequence[int], np.random.Generator], tuple[int, ...]]


def random_policy(act_shape_n: Sequence[int], rng: np.random.Generator) -> tuple[int, ...]:
    """Each agent's action drawn uniformly from its own actions."""
    return tuple(int(rng.integers(n)) for n in act_shape_n)


def still_policy(act_shape_n: Sequence[int], rng: np.random.Generator) -> tuple[int, ...]:
    """Every agent takes action 0 (no movement, or the speaker's first word)."""
    return tuple(0 for _ in act_shape_n)


BASELINES: dict[str, Policy] = {"random": random_policy, "still": still_policy}


def baseline_return(task: str, policy: Policy, episodes: int = 100, seed: int = 0) -> float:
    """Mean team return of ``policy`` on ``task`` over ``episodes`` whole episodes."""
    particle = ParticleEnv(task, max_cycles=MAX_CYCLES)
    counts = [n for n in particle.act_shape_n if isinstance(n, int)]  # discrete: action counts
    env = TeamEnv(particle)
    rng = np.random.default_rng(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(policy(counts, rng))
            total, done = total + reward, terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def collect(results: Path = RESULTS) -> dict[str, dict[str, Benchmark]]:
    """Task → algorithm → its benchmark, from every ``<ALGO>-simple_*.json`` in ``results``."""
    tasks: dict[str, dict[str, Benchmark]] = {}
    for path in sorted(results.glob("*-simple_*.json")):
        algo, task = path.stem.split("-", 1)
        benchmark = load_results(path).get(task)
        if benchmark is not None and benchmark.runs:
            tasks.setdefault(task, {})[algo] = benchmark
    return tasks


def mean_curve(benchmark: Benchmark) -> tuple[list[int], np.ndarray]:
    """The evaluation steps every seed reached and the seeds' returns there ``[seeds, steps]``."""
    per_seed = [dict(run.evals) for run in benchmark.runs]
    steps = sorted(set.intersection(*(set(evals) for evals in per_seed)))
    return steps, np.array([[evals[step] for step in steps] for evals in per_seed])


def plot_task(
    task: str, benchmarks: dict[str, Benchmark], baselines: dict[str, float], out: Path
) -> None:
    """Each algorithm's mean curve with its min–max band over seeds, baselines as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    try:
        for algo, benchmark in benchmarks.items():
            steps, returns = mean_curve(benchmark)
            label = f"{algo} ({len(benchmark.runs)} seeds)"
            (line,) = axes.plot(steps, returns.mean(axis=0), linewidth=1.6, label=label)
            axes.fill_between(
                steps, returns.min(axis=0), returns.max(axis=0), color=line.get_color(), alpha=0.2
            )
        for (name, value), style in zip(baselines.items(), ("--", ":"), strict=True):
            axes.axhline(value, color="grey", linestyle=style, linewidth=1, label=name)
        axes.set(title=task, xlabel="environment steps", ylabel="mean greedy team return")
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small", loc="lower right")
        figure.tight_layout()
        figure.savefig(out, metadata={"Software": None})
    finally:
        plt.close(figure)


def task_rows(benchmarks: dict[str, Benchmark]) -> list[list[object]]:
    """One row per algorithm: seeds, budget, final return mean ± std and per seed, commits."""
    rows: list[list[object]] = []
    for algo, benchmark in benchmarks.items():
        finals = [run.final_eval_return for run in benchmark.runs]
        if any(final is None for final in finals):
            raise ValueError(f"{algo}: a run without a final evaluation; rerun it")
        values = np.array(finals, dtype=float)
        rows.append(
            [
                algo,
                ", ".join(str(run.seed) for run in benchmark.runs),
                max(run.env_steps for run in benchmark.runs),
                f"{values.mean():.1f} ± {values.std():.1f}",
                " / ".join(f"{value:.1f}" for value in values),
                ", ".join(sorted({f"`{run.commit}`" for run in benchmark.runs})),
            ]
        )
    return rows


def report(tasks: dict[str, dict[str, Benchmark]], out_dir: Path = RESULTS) -> Path:
    """Write the tables and one figure per task; return the table file."""
    lines = [header("Multi-agent algorithms on the particle tasks").rstrip("\n"), ""]
    lines += [
        "Final greedy team return (the sum of every agent's rewards over a 25-step episode, mean "
        "of 10 evaluation episodes) at the end of each run; mean ± standard deviation over "
        "seeds. Random and still: 100 episodes of uniformly random actions and of action 0, "
        "measured by this command.",
        "",
    ]
    header_row = ["algo", "seeds", "env steps", "final (mean ± std)", "per seed", "commits"]
    for task, benchmarks in sorted(tasks.items()):
        baselines = {name: baseline_return(task, policy) for name, policy in BASELINES.items()}
        rows = task_rows(benchmarks)
        rows += [[name, "", "", f"{value:.1f}", "", ""] for name, value in baselines.items()]
        figure = out_dir / f"multi-agent-{task}.png"
        plot_task(task, benchmarks, baselines, figure)
        lines += [f"## {task}", "", markdown_table(header_row, rows), ""]
        lines += [f"![{task}]({figure.name})", ""]
    path = out_dir / "multi-agent.md"
    path.write_text("\n".join(lines))
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    tasks = collect()
    if not tasks:
        raise SystemExit(f"no <ALGO>-simple_*.json results in {RESULTS}")
    print(f"wrote {report(tasks)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
