"""Benchmark of IMPALA on CartPole-v1: greedy eval ≥ 450 within 200k env steps, 2 remote actors.

Run ``python benchmarks/impala/impala.py`` from the repository root: it trains seeds 0, 1 and 2
(each with 2 actors on an embedded xparl cluster), stores the figures in
``benchmarks/impala/results-cartpole.json``, rewrites ``results-cartpole.md`` and plots the
evaluation curves to ``cartpole.png``. ``run(env_id, seed)`` is the entry point of the shared
runner (``nox -s bench -- IMPALA CartPole-v1``).
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
RESULTS_JSON = HERE / "results-cartpole.json"
RESULTS_MD = HERE / "results-cartpole.md"
CURVE_PNG = HERE / "cartpole.png"

_example = load_example("IMPALA")

#: The hyperparameters of the benchmark: the example's CartPole defaults.
CONFIGS: dict[str, dict[str, Any]] = {
    "CartPole-v1": dataclasses.asdict(_example.DEFAULTS["CartPole-v1"]),
}


def model_description(env_id: str = "CartPole-v1") -> str:
    """The example's model for ``env_id`` in words, for the results table."""
    model = _example.make_model(env_id)
    if not hasattr(model, "policy_torso"):
        return type(model).__name__
    widths = [layer.weight.shape[1] for layer in model.policy_torso if hasattr(layer, "weight")]
    return (
        f"`MLPModel` (examples/IMPALA/model.py): separate policy and value torsos of "
        f"{'-'.join(map(str, widths))} tanh units, value output x {model.value_scale:g}"
    )


def run(env_id: str, seed: int) -> dict[str, Any]:
    """Train IMPALA on ``env_id`` with ``seed`` and the benchmark's config; return the figures."""
    if env_id not in CONFIGS:
        raise KeyError(f"no IMPALA benchmark config for {env_id!r}; known: {sorted(CONFIGS)}")
    settings = _example.IMPALASettings(**CONFIGS[env_id])
    with tempfile.TemporaryDirectory(prefix="impala-bench-") as logdir:
        result = _example.train(env_id, seed, settings=settings, logdir=logdir, quiet=True)
    result["steps_to_target"] = result["first_target_step"]
    result["passed"] = (
        result["first_target_step"] is not None and result["final_eval_return"] >= settings.target
    )
    return result


def _render(entry: dict[str, Any]) -> str:
    config = entry["config"]
    rows = [
        [
            r["seed"],
            r["env_steps"],
            f"{r['wall_s']:.1f}",
            f"{r['sps']:.0f}",
            f"{r['utilisation']:.0%}",
            r["first_target_step"] if r["first_target_step"] is not None else "not reached",
            f"{r['final_eval_return']:.1f}",
            "yes" if r["passed"] else "no",
        ]
        for r in entry["runs"]
    ]
    header = ["seed", "env steps", "wall s", "steady SPS", "learner busy"]
    header += ["first eval >= 450 at step", "final eval return", "passed"]
    return "\n".join(
        [
            "# IMPALA on CartPole-v1",
            "",
            f"- command: `{entry['command']}`",
            f"- commit: `{entry['commit']}`",
            f"- machine: {entry['machine']} (shared with other jobs: absolute times move 2-4x)",
            f"- seeds: {[r['seed'] for r in entry['runs']]}",
            f"- target: greedy evaluation mean over 10 episodes >= {config['target']} within "
            f"{config['total_steps']} env steps, and a final evaluation >= {config['target']}",
            f"- config: `{json.dumps(config)}`",
            f"- model: {entry['model']}",
            "",
            markdown_table(header, rows),
            "",
            f"![evaluation curves]({CURVE_PNG.name})",
            "",
        ]
    )


def _plot(runs: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for r in runs:
        steps, returns = zip(*r["evals"], strict=True) if r["evals"] else ((), ())
        ax.plot(steps, returns, marker=".", label=f"seed {r['seed']}")
    ax.axhline(450, color="grey", linestyle="--", linewidth=1)
    ax.set(xlabel="env steps", ylabel="greedy return (10 episodes)", title="IMPALA, CartPole-v1")
    ax.legend()
    fig.tight_layout()
    fig.savefig(CURVE_PNG, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    runs = []
    for seed in args.seeds:
        result = run("CartPole-v1", seed)
        runs.append({"seed": seed, **result})
        print(seed, result["first_target_step"], result["final_eval_return"], flush=True)
    entry = {
        "command": " ".join(["python benchmarks/impala/impala.py", *sys.argv[1:]]),
        "commit": commit(),
        "machine": machine(),
        "config": CONFIGS["CartPole-v1"],
        "model": model_description(),
        "runs": runs,
    }
    RESULTS_JSON.write_text(json.dumps({"CartPole-v1": entry}, indent=1) + "\n")
    RESULTS_MD.write_text(_render(entry))
    _plot(runs)
    print(f"wrote {RESULTS_MD}")


if __name__ == "__main__":
    main()
