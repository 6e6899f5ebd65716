"""Benchmark of the QuickStart (REINFORCE on CartPole-v1): episodes until the greedy eval hits 475.

Run ``python benchmarks/pg/quickstart.py`` from the repository root: it trains seeds 0, 1 and 2
and writes ``benchmarks/pg/results-quickstart.md``. ``run(env_id, seed)`` is the entry point
of the shared runner (``benchmarks/run.py PolicyGradient CartPole-v1``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _report import commit, load_example, machine, markdown_table

RESULTS = Path(__file__).resolve().parent / "results-quickstart.md"

CONFIGS: dict[str, dict[str, Any]] = {
    "CartPole-v1": {
        "max_episodes": 1000,
        "eval_every": 20,
        "lr": 2e-3,
        "hidden_size": 64,
        "gamma": 0.99,
        "episodes_per_update": 1,
        "target": 475.0,
    },
}


def run(env_id: str, seed: int) -> dict[str, Any]:
    """Train the QuickStart on ``env_id`` with ``seed``; return the figures of the run."""
    if env_id not in CONFIGS:
        raise KeyError(f"no QuickStart config for {env_id!r}; known: {sorted(CONFIGS)}")
    config = {k: v for k, v in CONFIGS[env_id].items() if k != "target"}
    train = load_example("QuickStart").train
    with tempfile.TemporaryDirectory(prefix="quickstart-bench-") as logdir:
        result = train(seed=seed, logdir=logdir, quiet=True, **config)
    result.pop("save_path")
    return {
        "env_id": env_id,
        "seed": seed,
        **result,
        "sps": result["env_steps"] / result["wall_s"],
        "steps_to_target": result["env_steps"] if result["reached"] else None,
        "passed": result["reached"],
    }


def main(argv: list[str] | None = None) -> None:
    """Run the seeds and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    at = commit()  # before this run writes its own results files
    rows, runs = [], []
    for seed in args.seeds:
        result = run("CartPole-v1", seed)
        runs.append({"seed": seed, "evals": result["evals"]})
        rows.append(
            [
                seed,
                result["episodes"] if result["reached"] else f"not reached ({result['episodes']})",
                result["env_steps"],
                f"{result['wall_s']:.1f}",
                f"{result['final_eval_return']:.1f}",
            ]
        )
    config = CONFIGS["CartPole-v1"]
    seeds = " ".join(map(str, args.seeds))
    text = "\n".join(
        [
            "# QuickStart benchmark: REINFORCE on CartPole-v1",
            "",
            f"- command: `python benchmarks/pg/quickstart.py --seeds {seeds}`",
            f"- commit: `{at}`",
            f"- machine: {machine()}",
            f"- config: {config}",
            "- target: greedy evaluation mean over 10 episodes >= 475 (checked every "
            f"{config['eval_every']} episodes), within {config['max_episodes']} episodes",
            "",
            markdown_table(
                ["seed", "episodes to 475", "env steps", "wall s", "final eval return"], rows
            ),
            "",
        ]
    )
    RESULTS.write_text(text)
    # The evaluation curves, in the shape the docs draw (as results-ppo.json).
    curves = {"CartPole-v1": {"commit": at, "config": config, "runs": runs}}
    RESULTS.with_suffix(".json").write_text(json.dumps(curves, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
