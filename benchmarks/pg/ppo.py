"""Benchmark of PPO on CartPole-v1 (eval ≥ 475 within 50k steps) and Pendulum-v1 (≥ −250, 200k).

Run ``python benchmarks/pg/ppo.py --env CartPole-v1`` (or ``--env Pendulum-v1``, or both) from
the repository root: it trains seeds 0, 1 and 2, stores the figures in
``benchmarks/pg/results-ppo.json`` and rewrites ``benchmarks/pg/results-ppo.md`` from all
stored runs. ``run(env_id, seed)`` is the entry point of the shared runner
(``benchmarks/run.py PPO CartPole-v1``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _report import commit, load_example, machine, markdown_table

HERE = Path(__file__).resolve().parent
RESULTS_JSON = HERE / "results-ppo.json"
RESULTS_MD = HERE / "results-ppo.md"

_example = load_example("PPO")

#: The hyperparameters of each benchmark: the example's defaults for that environment.
CONFIGS: dict[str, dict[str, Any]] = {
    env_id: dataclasses.asdict(settings) for env_id, settings in _example.DEFAULTS.items()
}


def run(env_id: str, seed: int) -> dict[str, Any]:
    """Train PPO on ``env_id`` with ``seed`` and the benchmark's config; return the figures."""
    if env_id not in CONFIGS:
        raise KeyError(f"no PPO benchmark config for {env_id!r}; known: {sorted(CONFIGS)}")
    settings = _example.PPOSettings(**CONFIGS[env_id])
    with tempfile.TemporaryDirectory(prefix="ppo-bench-") as logdir:
        result = _example.train(env_id, seed, settings=settings, logdir=logdir, quiet=True)
    result["steps_to_target"] = result["first_target_step"]
    result["passed"] = result["first_target_step"] is not None
    return result


def _render(results: dict[str, dict[str, Any]]) -> str:
    lines = ["# PPO benchmarks", ""]
    for env_id, entry in results.items():
        config = entry["config"]
        lines += [
            f"## {env_id}",
            "",
            f"- command: `{entry['command']}`",
            f"- commit: `{entry['commit']}`",
            f"- machine: {entry['machine']}",
            f"- target: greedy evaluation mean over 10 episodes >= {config['target']} within "
            f"{config['total_steps']} env steps (evaluated every ~{config['eval_every']} steps)",
            f"- config: `{json.dumps(config)}`",
            "",
        ]
        rows = [
            [
                run["seed"],
                run["env_steps"],
                f"{run['wall_s']:.1f}",
                f"{run['sps']:.0f}",
                run["first_target_step"] if run["first_target_step"] is not None else "not reached",
                f"{run['final_eval_return']:.1f}",
                f"{max(value for _, value in run['evals']):.1f}",
            ]
            for run in entry["runs"]
        ]
        header = ["seed", "env steps", "wall s", "SPS", "first step eval >= target"]
        header += ["final eval return", "best eval return"]
        lines += [markdown_table(header, rows), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run the seeds of the chosen environments and rewrite the results files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", nargs="+", default=sorted(CONFIGS), choices=sorted(CONFIGS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    results = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}
    for env_id in args.env:
        runs = []
        for seed in args.seeds:
            result = run(env_id, seed)
            result.pop("settings")
            runs.append(result)
            print(f"{env_id} seed {seed}: {json.dumps(result)}", flush=True)
        seeds = " ".join(map(str, args.seeds))
        results[env_id] = {
            "command": f"python benchmarks/pg/ppo.py --env {env_id} --seeds {seeds}",
            "commit": commit(),
            "machine": machine(),
            "config": CONFIGS[env_id],
            "runs": runs,
        }
        RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")
        RESULTS_MD.write_text(_render(results))
    print(RESULTS_MD.read_text())


if __name__ == "__main__":
    main()
