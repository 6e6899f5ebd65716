"""Environment steps per second of the examples, this tree against a baseline commit.

``python benchmarks/utils/example_speed.py --baseline e726591`` extracts the trees of the
baseline commit and of ``HEAD`` into a temporary folder, then runs each example's ``train`` on a
fixed budget, alternating baseline and ``HEAD`` runs (``--repeats`` rounds) in fresh
subprocesses that import that tree's packages first (``PYTHONPATH``). It also times the
collector alone: ``RolloutCollector.step``/``rollout`` against bare ``envs.step`` with a random
policy. The table goes to ``benchmarks/results/example-speed.md``: medians and their ratios,
all measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _report import ROOT, header, markdown_table  # noqa: E402

PACKAGES = ["parl-core", "parl-utils", "parl-remote", "parl-algos-pg", "parl-algos-dqn"]
RUNS: dict[str, tuple[str, dict[str, object]]] = {
    "QuickStart (REINFORCE, 1 env)": ("QuickStart", {"max_episodes": 100, "quiet": True}),
    "DQN CartPole-v1 (4 envs)": ("DQN", {"total_steps": 10_000, "progress": False}),
    "PPO CartPole-v1 (8 envs)": ("PPO", {"env_id": "CartPole-v1", "total_steps": 16_384}),
    "PPO Pendulum-v1 (4 envs)": ("PPO", {"env_id": "Pendulum-v1", "total_steps": 16_384}),
}
# Runs in a fresh interpreter: loads examples/<name>/train.py of `tree` and prints the figures.
SNIPPET = """
import importlib.util, json, sys, tempfile, time
tree, name, kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
folder = f"{tree}/examples/{name}"
sys.path.insert(0, folder)
spec = importlib.util.spec_from_file_location(f"example_{name}", f"{folder}/train.py")
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
if name != "DQN":
    kwargs["logdir"] = tempfile.mkdtemp()
if name == "PPO":
    kwargs["quiet"] = True
cpu = time.process_time()
result = module.train(**kwargs)
cpu = time.process_time() - cpu
figures = {"env_steps": result["env_steps"], "wall_s": result["wall_s"], "cpu_s": cpu}
print("RESULT " + json.dumps(figures))
"""


def extract(commit: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_example(tree: Path, name: str, kwargs: dict[str, object]) -> tuple[float, float]:
    """Run one example; return its env steps per wall second and per CPU second."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join(str(tree / p / "src") for p in PACKAGES)
    completed = subprocess.run(
        [sys.executable, "-c", SNIPPET, str(tree), name, json.dumps(kwargs)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"{name} in {tree} failed:\n{completed.stderr[-3000:]}")
    figures = json.loads(lines[-1][len("RESULT ") :])
    return figures["env_steps"] / figures["wall_s"], figures["env_steps"] / figures["cpu_s"]


def collector_overhead(num_envs: int = 8, steps: int = 2_048, rounds: int = 7) -> list[list[str]]:
    """Steps per CPU second of bare envs.step, collector.step and collector.rollout.

    Random actions; the three loops alternate for ``rounds`` rounds; the medians are reported.
    """
    from parl.utils import RolloutCollector, make_vector_env

    import numpy as np

    actions = np.random.default_rng(0).integers(0, 2, size=(steps, num_envs))

    def bare() -> None:
        envs = make_vector_env("CartPole-v1", num_envs)
        envs.reset(seed=0)
        for t in range(steps):
            envs.step(actions[t])

    def step() -> None:
        collector = RolloutCollector(make_vector_env("CartPole-v1", num_envs), seed=0)
        for t in range(steps):
            collector.step(actions[t])

    def rollout() -> None:
        collector = RolloutCollector(make_vector_env("CartPole-v1", num_envs), seed=0)
        counter = iter(range(steps))
        for _ in range(steps // 128):
            collector.rollout(lambda obs: actions[next(counter)], 128)

    loops = {
        "bare envs.step": bare,
        "RolloutCollector.step": step,
        "RolloutCollector.rollout (T=128)": rollout,
    }
    rates: dict[str, list[float]] = {label: [] for label in loops}
    for _ in range(rounds):
        for label, loop in loops.items():
            # CPU time of this process: what the loop costs, whatever else the machine runs.
            start = time.process_time()
            loop()
            rates[label].append(steps * num_envs / (time.process_time() - start))
    medians = {label: statistics.median(values) for label, values in rates.items()}
    base = medians["bare envs.step"]
    return [[label, f"{rate:.0f}", f"{rate / base:.2f}"] for label, rate in medians.items()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="e726591", help="git commit to compare against")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of runs (default 2)")
    args = parser.parse_args(argv)
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {
        label: {"old": [], "new": []} for label in RUNS
    }
    with tempfile.TemporaryDirectory(prefix="parl-speed-") as tmp:
        baseline = extract(args.baseline, Path(tmp) / "baseline")
        current = extract("HEAD", Path(tmp) / "head")
        for _ in range(args.repeats):
            for label, (name, kwargs) in RUNS.items():
                runs[label]["old"].append(run_example(baseline, name, dict(kwargs)))
                runs[label]["new"].append(run_example(current, name, dict(kwargs)))
                print(label, runs[label], flush=True)
    rows = []
    for label, pairs in runs.items():
        cells = [label]
        for column in (0, 1):  # wall, CPU
            old = [run[column] for run in pairs["old"]]
            new = [run[column] for run in pairs["new"]]
            # Each round's two runs ran back to back: their ratio is the robust figure.
            paired = [n / o for o, n in zip(old, new, strict=True)]
            cells += [
                f"{statistics.median(old):.0f}",
                f"{statistics.median(new):.0f}",
                f"{statistics.median(paired):.2f} ({' '.join(f'{r:.2f}' for r in paired)})",
            ]
        rows.append(cells)
    text = (
        header("Examples: environment steps per second, before and after the rollout collector")
        + f"- baseline: `{args.baseline}`; medians of {args.repeats} alternating runs each; "
        "env steps per wall second as each example reports it (learning and evaluation "
        "included) and per CPU second of the run; ratio = median over rounds of HEAD/baseline "
        "within a round (each round's ratios in brackets)\n"
        "- caveat: the two versions learn differently (the baseline DQN spent a step per episode "
        "on resets), and evaluation costs more for a better policy (longer episodes)\n\n"
        + markdown_table(
            [
                "example",
                "baseline steps/wall s",
                "HEAD steps/wall s",
                "ratio (rounds)",
                "baseline steps/CPU s",
                "HEAD steps/CPU s",
                "ratio (rounds)",
            ],
            rows,
        )
        + "\n\nThe collector alone (CartPole-v1, 8 envs, random actions, 2048 vector steps, "
        "median of 7 alternating rounds; env steps per CPU second of the process, which other "
        "load on the machine disturbs far less than wall time):\n\n"
        + markdown_table(["loop", "steps per CPU s", "vs bare"], collector_overhead())
        + "\n"
    )
    out = ROOT / "benchmarks" / "results" / "example-speed.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
