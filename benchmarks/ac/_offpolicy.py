"""The shared part of the SAC, TD3 and DDPG benchmarks: settings, one run, the report.

Each algorithm's module (``sac.py``, ``td3.py``, ``ddpg.py``) binds :func:`run` to its name;
``python benchmarks/run.py SAC Pendulum-v1`` (``nox -s bench -- SAC Pendulum-v1``) runs seeds
0-2 and :func:`report` writes ``benchmarks/ac/results/<ALGO>-<ENV>.{json,md,png}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _report import commit, load_example, machine, markdown_table

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

_example = load_example("SAC")

#: Settings per environment. Pendulum: 64-64 networks, which the shared 2-core machine can
#: train 9 times in an hour (256-256 updates cost ~6x more here); one update per env step.
CONFIGS: dict[str, dict[str, Any]] = {
    "Pendulum-v1": {
        "total_steps": 10_000,
        "hidden_sizes": (64, 64),
        "learning_starts": 1_000,
        "eval_interval": 1_000,
        "eval_episodes": 10,
        "target_return": -200.0,
    },
    "HalfCheetah-v5": {
        "total_steps": 50_000,
        "hidden_sizes": (256, 256),
        "learning_starts": 5_000,
        "eval_interval": 5_000,
        "eval_episodes": 10,
        "target_return": 3_000.0,
    },
}


def run(algo: str, env_id: str, seed: int) -> dict[str, Any]:
    """Train ``algo`` on ``env_id`` with ``seed`` and the benchmark's settings."""
    if env_id not in CONFIGS:
        raise KeyError(f"no {algo} benchmark config for {env_id!r}; known: {sorted(CONFIGS)}")
    code = commit()  # the code that trains, not the tree when the run ends
    result = _example.train(env_id=env_id, algo=algo, seed=seed, progress=False, **CONFIGS[env_id])
    result["passed"] = result["steps_to_target"] is not None
    result["commit"] = code
    return result


def report(
    algo: str,
    env_id: str,
    seeds: list[int],
    results: list[dict[str, Any]],
    config: dict[str, Any] | None = None,
) -> Path:
    """Write the runs as JSON, a markdown table and a PNG of the evaluation curves.

    ``config`` is the benchmark's settings (default: this module's ``CONFIGS[env_id]``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"{algo}-{env_id}"
    config = CONFIGS[env_id] if config is None else config
    command = f"nox -s bench -- {algo} {env_id} --seeds {' '.join(map(str, seeds))}"
    for result in results:
        result |= {"command": command, "machine": machine()}
        result.setdefault("commit", commit())  # run() records the commit it started from
    # Seeds run in separate invocations accumulate; a rerun of a seed replaces it.
    json_path = stem.with_suffix(".json")
    kept = json.loads(json_path.read_text())["runs"] if json_path.exists() else []
    fresh = {r["seed"] for r in results}
    results = sorted([r for r in kept if r["seed"] not in fresh] + results, key=lambda r: r["seed"])
    record = {"config": config, "runs": results}
    json_path.write_text(json.dumps(record, indent=1, default=list) + "\n")
    figure, axes = plt.subplots(figsize=(6, 4))
    for result in results:
        steps, returns = zip(*result["evals"], strict=True)
        axes.plot(steps, returns, marker="o", label=f"seed {result['seed']}")
    axes.axhline(config["target_return"], color="grey", linestyle="--", label="target")
    axes.set(xlabel="env steps", ylabel="mean greedy return (10 episodes)")
    axes.set_title(f"{algo} {env_id}")
    axes.legend()
    figure.tight_layout()
    figure.savefig(stem.with_suffix(".png"), dpi=100)
    rows = [
        [
            r["seed"],
            r["env_steps"],
            f"{r['wall_s']:.0f}",
            f"{r['sps']:.1f}",
            r["steps_to_target"] if r["steps_to_target"] is not None else "not reached",
            f"{r['final_eval_return']:.1f}",
            f"{r['best_eval_return']:.1f}",
        ]
        for r in results
    ]
    header = ["seed", "env steps", "wall s", "env steps/s", "first eval >= target"]
    header += ["final eval", "best eval"]
    stem.with_suffix(".md").write_text(
        f"# {algo} on {env_id}\n\n"
        + "".join(f"- seed {r['seed']}: `{r['command']}` at `{r['commit']}`\n" for r in results)
        + f"- machine: {results[-1]['machine']}\n- target: mean greedy return over 10 episodes >= "
        f"{config['target_return']} within {config['total_steps']} env steps\n"
        f"- config: `{json.dumps(config, default=list)}`\n\n"
        + markdown_table(header, rows)
        + f"\n\n![curves]({stem.name}.png)\n"
    )
    return stem.with_suffix(".md")
