"""Environment steps per second of the examples, this tree against a baseline commit.

``python -m benchmarks.utils.example_speed --baseline COMMIT`` extracts the trees of the
baseline commit and of ``HEAD`` into a temporary folder, then runs each example from its
command line on a fixed budget, alternating baseline and ``HEAD`` runs (``--repeats`` rounds)
in fresh subprocesses that import that tree's packages first (``PYTHONPATH``), and reads the
``result.json`` the run writes (so the baseline must be a commit whose examples write one).
It also times the collector alone: ``RolloutCollector.step``/``rollout`` against bare
``envs.step`` with a random policy. The table goes to ``benchmarks/results/example-speed.md``:
medians and their ratios, all measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from io import BytesIO
from pathlib import Path

from benchmarks._report import ROOT, header, markdown_table

HERE = Path(__file__).resolve().parent

PACKAGES = ["parl-core", "parl-utils", "parl-remote", "parl-algos-pg", "parl-algos-dqn"]
RUNS: dict[str, tuple[str, list[str]]] = {
    "QuickStart (REINFORCE, 1 env)": ("QuickStart", ["--max-episodes", "100"]),
    "DQN CartPole-v1 (4 envs)": ("DQN", ["--total-steps", "10000"]),
    "PPO CartPole-v1 (8 envs)": ("PPO", ["--env-id", "CartPole-v1", "--total-steps", "16384"]),
    "PPO Pendulum-v1 (4 envs)": (
        "PPO",
        ["--config", "benchmarks/configs/PPO-Pendulum-v1.yaml", "--total-steps", "16384"],
    ),
}


def extract(commit: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_example(tree: Path, name: str, flags: list[str]) -> tuple[float, float]:
    """Run one example of ``tree`` from its command line, with that tree's packages first;
    return its env steps per wall second and per CPU second (the child's, from its start)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join(str(tree / p / "src") for p in PACKAGES)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="example-speed-") as logdir:
        completed = subprocess.run(
            [sys.executable, f"examples/{name}/train.py", *flags, "--quiet", "--logdir", logdir],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"{name} in {tree} failed:\n{completed.stderr[-3000:]}")
        figures = json.loads((Path(logdir) / "result.json").read_text())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return figures["env_steps"] / figures["wall_s"], figures["env_steps"] / cpu_s


def collector_overhead(num_envs: int = 8, steps: int = 20_000) -> list[list[str]]:
    """CPU microseconds per vector step: CartPole's own step against the collector's work.

    The collector's work is measured on a vector env whose ``step`` costs next to nothing
    (precomputed arrays; each sub-env's episode ends every 200 steps), with a policy that
    returns precomputed actions, so what is left is the collector's bookkeeping.
    """
    from parl.utils import RolloutCollector, make_vector_env

    import gymnasium as gym
    import numpy as np

    class InstantEnvs(gym.vector.VectorEnv):
        def __init__(self) -> None:
            self.metadata = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}
            self.num_envs = num_envs
            self.single_observation_space = gym.spaces.Box(-1, 1, (4,), np.float32)
            self.single_action_space = gym.spaces.Discrete(2)
            self.t = 0
            self.obs = np.zeros((num_envs, 4), np.float32)
            self.rewards = np.ones(num_envs)
            self.false = np.zeros(num_envs, bool)
            self.final = {"final_obs": np.array([self.obs[0]] * num_envs, dtype=object)}

        def reset(self, *, seed=None, options=None):  # type: ignore[no-untyped-def]
            return self.obs.copy(), {}

        def step(self, actions):  # type: ignore[no-untyped-def]
            self.t += 1
            truncations = self.false.copy()
            truncations[self.t % 200 % num_envs] = self.t % 25 == 0
            infos = self.final if truncations.any() else {}
            return self.obs.copy(), self.rewards, self.false, truncations, infos

    actions = np.zeros(num_envs, np.int64)

    def cpu_us_per_step(loop: Callable[[], None]) -> float:
        start = time.process_time()
        loop()
        return (time.process_time() - start) / steps * 1e6

    def cartpole() -> None:
        envs = make_vector_env("CartPole-v1", num_envs)
        envs.reset(seed=0)
        for _ in range(steps):
            envs.step(actions)

    def bare() -> None:
        envs = InstantEnvs()
        for _ in range(steps):
            envs.step(actions)

    def step() -> None:
        collector = RolloutCollector(InstantEnvs())
        for _ in range(steps):
            collector.step(actions)

    def rollout() -> None:
        collector = RolloutCollector(InstantEnvs())
        for _ in range(steps // 100):
            collector.rollout(lambda obs: actions, 100)

    costs = {
        name: cpu_us_per_step(loop)
        for name, loop in [
            ("cartpole", cartpole),
            ("bare", bare),
            ("step", step),
            ("rollout", rollout),
        ]
    }
    env_cost = costs["cartpole"]
    rows = [[f"CartPole-v1 SyncVectorEnv.step ({num_envs} envs)", f"{env_cost:.1f}", "1.00"]]
    for name in ("step", "rollout"):
        extra = costs[name] - costs["bare"]
        rows.append(
            [f"RolloutCollector.{name}: added work", f"{extra:.1f}", f"{extra / env_cost:.2f}"]
        )
    return rows


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
            for label, (name, flags) in RUNS.items():
                runs[label]["old"].append(run_example(baseline, name, flags))
                runs[label]["new"].append(run_example(current, name, flags))
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
        + "\n\nThe collector's own work per vector step, in CPU microseconds (20,000 vector steps "
        "of 8 sub-envs; rollouts of 100 steps; the collector on an env whose step costs next "
        "to nothing, minus that env's cost), against CartPole's own step:\n\n"
        + markdown_table(
            ["what", "CPU µs per vector step", "vs CartPole's step"], collector_overhead()
        )
        + "\n"
    )
    out = ROOT / "benchmarks" / "results" / "example-speed.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
