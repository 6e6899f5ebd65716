"""DQN benchmark: reach the CartPole-v1 target within the step budget, per seed.

``CONFIGS`` maps an env id to the keyword arguments of ``examples/DQN/train.py::train`` and the
bar the run must clear; :func:`run` trains one seed and returns its figures, so that the shared
runner ``benchmarks/run.py DQN CartPole-v1`` can call it. Run this file directly to benchmark
several seeds and algorithms and write ``results.md``::

    python benchmarks/dqn/dqn.py --algos DQN DDQN --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _report import commit, load_example, machine  # noqa: E402

ALGO = "DQN"

# RL Baselines3 Zoo's CartPole-v1 DQN settings (net 256-256, batch 64, learning_starts 1000,
# 128 gradient steps every 256 env steps, epsilon 1 -> 0.04 over 16 %, Huber loss, grad-norm
# 10; the zoo syncs the target every 10 env steps, which between its training rounds amounts to
# one sync per round of 128 gradient steps), except lr 1.5e-3 instead of 2.3e-3: with 2.3e-3
# every seed reached 475 but 5 of 6 DQN/DDQN runs had fallen back to 52-119 by step 50k;
# with 1.5e-3 4 of 6 end at 433-500 and all still reach 475 (seeds 0-2, this machine).
CONFIGS: dict[str, dict[str, Any]] = {
    "CartPole-v1": {
        "train": {
            "total_steps": 50_000,
            "num_envs": 4,
            "hidden_sizes": (256, 256),
            "lr": 1.5e-3,
            "gamma": 0.99,
            "loss": "huber",
            "max_grad_norm": 10.0,
            "buffer_size": 100_000,
            "batch_size": 64,
            "learning_starts": 1_000,
            "train_freq": 256,
            "gradient_steps": 128,
            "target_update_interval": 128,
            "exploration_fraction": 0.16,
            "final_epsilon": 0.04,
            "eval_interval": 2_500,
            "eval_episodes": 10,
        },
        "target_return": 475.0,
    },
}


def run(env_id: str, seed: int, algo: str = ALGO) -> dict[str, Any]:
    """Train ``algo`` on ``env_id`` with ``seed`` and return the example's figures.

    The result adds ``target_return`` and ``passed`` (an evaluation reached the target within
    the budget).

    Raises:
        KeyError: ``env_id`` has no entry in :data:`CONFIGS`.
    """
    if env_id not in CONFIGS:
        raise KeyError(f"no {algo} benchmark config for {env_id!r}; known: {sorted(CONFIGS)}")
    config = CONFIGS[env_id]
    result = load_example("DQN").train(
        env_id=env_id,
        algo=algo,
        seed=seed,
        target_return=config["target_return"],
        progress=False,
        **config["train"],
    )
    result["target_return"] = config["target_return"]
    result["passed"] = result["steps_to_target"] is not None
    return result


def _steps(value: int | None) -> str:
    return "not reached" if value is None else str(value)


def write_results(results: Sequence[dict[str, Any]], command: str, path: Path) -> None:
    """Write a markdown table of ``results`` with the command, commit and machine."""
    lines = [
        "# DQN / DDQN benchmark",
        "",
        f"- command: `{command}`",
        f"- commit: `{commit()}`",
        f"- machine: {machine()}",
        "- eval: mean greedy return over 10 episodes (10 parallel envs), every 2,500 env steps",
        "  and after the last; `last` is the last of these, `best` the highest (with the env",
        "  steps of its first occurrence). `final` is what the example ends with: after",
        "  training it plays 10 fresh episodes (start states no evaluation used) with the final",
        "  policy and with the latest best-evaluated one and keeps the better (`restored`: yes",
        "  when that is the best-evaluated one); `final` is the kept policy's return on them.",
        "  `steps to 475` the env steps at the first evaluation with mean return >= 475, which is",
        "  the pass criterion. SPS counts env steps per wall second, training and evaluation",
        "  included.",
        "",
        "| algo | env | seed | env steps | wall s | env steps/s | final eval | restored "
        "| last eval | best eval (at) | steps to 475 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['algo']} | {r['env_id']} | {r['seed']} | {r['env_steps']} | {r['wall_s']:.0f} "
            f"| {r['sps']:.0f} | {r['final_eval_return']:.1f} "
            f"| {'yes' if r['restored_best'] else 'no'} | {r['last_eval_return']:.1f} "
            f"| {r['best_eval_return']:.1f} ({r['best_eval_steps']}) "
            f"| {_steps(r['steps_to_target'])} |"
        )
    lines += ["", "Evaluations per run (env steps: mean return):", ""]
    for r in results:
        history = ", ".join(f"{step}: {value:.0f}" for step, value in r["evals"])
        lines.append(f"- {r['algo']} seed {r['seed']}: {history}")
    path.write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    """Benchmark the given algorithms and seeds on one env and write the results table."""
    parser = argparse.ArgumentParser(description="DQN/DDQN benchmark")
    parser.add_argument("--env", default="CartPole-v1", choices=sorted(CONFIGS))
    parser.add_argument("--algos", nargs="+", default=["DQN", "DDQN"], choices=["DQN", "DDQN"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=HERE / "results.md")
    args = parser.parse_args(argv)
    results = []
    for algo in args.algos:
        for seed in args.seeds:
            result = run(args.env, seed, algo)
            print(
                f"{algo} {args.env} seed {seed}: final {result['final_eval_return']:.1f} "
                f"(restored: {result['restored_best']}, last {result['last_eval_return']:.1f}), "
                f"best {result['best_eval_return']:.1f}, steps to target "
                f"{_steps(result['steps_to_target'])}, {result['sps']:.0f} env steps/s",
                flush=True,
            )
            results.append(result)
            write_results(results, "python " + " ".join(sys.argv), args.out)


if __name__ == "__main__":
    main()
