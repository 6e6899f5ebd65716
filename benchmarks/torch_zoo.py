"""Every algorithm on torch at its benchmark config (one seed), beside the committed paddle run.

Each ``benchmarks/configs/<ALGO>-<ENV>.yaml`` whose example takes ``--backend`` and whose
environment installs here runs as a user would, ``python examples/<EXAMPLE>/train.py --config
<file> --seed 0 --backend torch --device <device>``, several at a time, each with a time limit
(a run cut by it reports the evaluations it logged). The table puts each run's best and final
greedy evaluation beside the paddle run of the same config and seed from
``benchmarks/results/<ALGO>-<ENV>.json`` where one is committed.

Run: ``python -m benchmarks.torch_zoo [--device cuda] [--jobs 8] [--time-limit 420]
[--only DQN SAC]`` (writes ``benchmarks/results/torch-zoo-<device>.md``).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks._report import ROOT, header, markdown_table
from benchmarks.run import CONFIGS, EXAMPLES, RESULTS

NEEDS = {"HalfCheetah": "mujoco", "Pong": "ale_py", "simple_": "mpe2"}
"""A module an environment needs, by a part of its name: configs whose module is missing here
are left out (and listed as such)."""


def configs(only: list[str]) -> tuple[list[Path], list[str]]:
    """The configs to run, and why the others are left out."""
    chosen, left_out = [], []
    for path in sorted(CONFIGS.glob("*.yaml")):
        algo = path.stem.split("-")[0]
        if only and algo not in only:
            continue
        missing = [m for part, m in NEEDS.items() if part in path.stem and not _installed(m)]
        if missing or algo not in EXAMPLES:
            left_out.append(f"{path.stem} ({', '.join(missing) or 'no example'} missing)")
        else:
            chosen.append(path)
    return chosen, left_out


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def run_one(path: Path, device: str, limit: float, workdir: Path) -> dict[str, object]:
    """Train one config on torch; return what its ``result.json`` (or its log) says."""
    algo = path.stem.split("-")[0]
    logdir = workdir / path.stem
    script = ROOT / "examples" / EXAMPLES[algo] / "train.py"
    command = [sys.executable, str(script), "--config", str(path), "--seed", "0"]
    command += ["--backend", "torch", "--logdir", str(logdir), "--quiet"]
    command += ["--device", device] if device != "cpu" else []  # ES's example has no --device
    env = dict(os.environ, OMP_NUM_THREADS="1", PARL_BACKEND="torch")
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit, env=env)
        status = "ok" if done.returncode == 0 else f"exit {done.returncode}: {_last(done.stderr)}"
    except subprocess.TimeoutExpired:
        status = f"cut at {limit:.0f} s"
    result = logdir / "result.json"
    found = json.loads(result.read_text()) if result.is_file() else logged_evaluations(logdir)
    return {
        "name": path.stem,
        "status": status,
        "wall_s": time.perf_counter() - start,
        "steps": found.get("env_steps"),
        "best": found.get("best_eval_return"),
        "final": found.get("final_eval_return"),
    }


def logged_evaluations(logdir: Path) -> dict[str, object]:
    """What a run cut by the time limit had logged: its evaluations in ``metrics.csv``."""
    metrics = logdir / "metrics.csv"
    if not metrics.is_file():
        return {}
    with metrics.open(newline="") as handle:
        evals = [
            (int(row["step"]), float(row["value"]))
            for row in csv.DictReader(handle)
            if row["tag"] == "eval/episodic_return"
        ]
    if not evals:
        return {}
    return {
        "env_steps": evals[-1][0],
        "best_eval_return": max(value for _, value in evals),
        "final_eval_return": evals[-1][1],
    }


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


def paddle_run(name: str) -> str:
    """The committed paddle run of seed 0 of the same benchmark: best / final evaluation."""
    found = [RESULTS / f"{name}.json", *ROOT.glob(f"benchmarks/*/results/{name}.json")]
    path = next((p for p in found if p.is_file()), None)
    if path is None:
        return "not committed"
    for benchmark in json.loads(path.read_text()).values():
        for run in benchmark["runs"]:
            if run["seed"] == 0:
                return f"{_num(run.get('best_eval_return'))} / {_num(run.get('final_eval_return'))}"
    return "no seed 0"


def _num(value: object) -> str:
    return "n/a" if value is None else f"{float(value):.1f}"  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:<index>")
    parser.add_argument("--jobs", type=int, default=2, help="configs trained at a time")
    parser.add_argument("--time-limit", type=float, default=420.0, help="seconds per run")
    parser.add_argument("--only", nargs="*", default=[], help="algorithms to run (default all)")
    args = parser.parse_args()
    chosen, left_out = configs(args.only)
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(args.jobs) as pool:
        runs = list(
            pool.map(lambda p: run_one(p, args.device, args.time_limit, Path(workdir)), chosen)
        )
    rows = [
        [
            run["name"],
            f"{_num(run['best'])} / {_num(run['final'])}",
            paddle_run(str(run["name"])),
            run["steps"] if run["steps"] is not None else "n/a",
            f"{float(run['wall_s']):.0f}",  # type: ignore[arg-type]
            run["status"],
        ]
        for run in runs
    ]
    columns = ["benchmark (seed 0)", "torch best / final eval", "paddle best / final eval"]
    columns += ["env steps", "wall s", "status"]
    text = header(f"Every algorithm on torch ({args.device})") + markdown_table(columns, rows)
    if left_out:
        text += "\n\nLeft out here: " + ", ".join(left_out) + "\n"
    (RESULTS / f"torch-zoo-{args.device.replace(':', '')}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
