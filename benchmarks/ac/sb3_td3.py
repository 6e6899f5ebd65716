"""Stable-Baselines3's TD3 learning HalfCheetah-v5 with our TD3 benchmark's settings.

``python -m benchmarks.ac.sb3_td3 --sb3-python /tmp/sb3/bin/python [--seeds 0 1 2]``

The settings are ``benchmarks/configs/TD3-HalfCheetah-v5.yaml`` on top of the defaults of
``examples/SAC/train.py`` (which trains our TD3) and of :class:`parl_algos_ac.TD3Config`, in
SB3's terms: 256-256 networks, one gradient step per env step after ``learning_starts``
uniformly random steps, batches of 256, Gaussian exploration noise 0.1, target smoothing noise
0.2 clipped at 0.5, policy delay 2. Every ``eval_every`` env steps the greedy policy plays
``eval_episodes`` episodes (start states seeded ``seed + 10_000 + i``, the same every time),
as our runs evaluate. Each seed trains in the SB3 interpreter (torch on CPU, one thread); the
results join ``benchmarks/results/SB3-TD3-HalfCheetah-v5.json`` (the one results schema)
with its table and curves. The SB3 venv::

    uv venv /tmp/sb3 && VIRTUAL_ENV=/tmp/sb3 uv pip install --find-links /opt/wheels \\
        torch==2.13.0 stable-baselines3 "gymnasium[mujoco]"
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from typing import Any

ENV_ID = "HalfCheetah-v5"
ALGO = "SB3-TD3"
EVAL_SEED_OFFSET = 10_000  # as parl.utils.EvalTracker


def sb3_settings() -> tuple[dict[str, Any], dict[str, Any]]:
    """The benchmark's settings file, and the run's full settings in SB3's terms."""
    import yaml

    from benchmarks._report import load_example
    from benchmarks.run import config_path
    from parl_algos_ac import TD3Config

    settings = yaml.safe_load(config_path("TD3", ENV_ID).read_text())
    fields: dict[str, Any] = {
        f.name: f.default for f in dataclasses.fields(load_example("SAC").Args)
    }
    fields |= {k: v for k, v in settings.items() if k in fields}
    # The defaults, as `TD3Config()`: mypy takes only a `default=` keyword of pydantic's `Field`
    # for a default, so it reads the fields declared `Field(3e-4, gt=0.0)` as required.
    td3 = TD3Config.model_validate({})
    sb3 = {
        "learning_rate": fields["lr"],
        "buffer_size": fields["buffer_size"],
        "learning_starts": fields["learning_starts"],
        "batch_size": fields["batch_size"],
        "tau": fields["tau"],
        "gamma": fields["gamma"],
        "train_freq": 1,
        "gradient_steps": 1,
        "policy_delay": td3.policy_freq,
        "target_policy_noise": td3.policy_noise,
        "target_noise_clip": td3.noise_clip,
        "action_noise_sigma": fields["expl_noise"],
        "net_arch": list(fields["hidden_sizes"]),
        "total_steps": fields["total_steps"],
        "eval_every": fields["eval_every"],
        "eval_episodes": fields["eval_episodes"],
        "target": fields["target"],
    }
    return settings, sb3


def train_sb3(config: dict[str, Any], seed: int) -> dict[str, Any]:
    """Train one seed with SB3 (runs in the SB3 interpreter); return steps, wall s, evals."""
    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3 import TD3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.noise import NormalActionNoise

    torch.set_num_threads(1)
    config = dict(config)
    total_steps, eval_every = config.pop("total_steps"), config.pop("eval_every")
    eval_episodes = config.pop("eval_episodes")
    config.pop("target")
    env = gym.make(ENV_ID)
    assert isinstance(env.action_space, gym.spaces.Box)
    act_dim = env.action_space.shape[0]
    sigma = config.pop("action_noise_sigma") * np.ones(act_dim)
    config["action_noise"] = NormalActionNoise(np.zeros(act_dim), sigma)
    policy_kwargs = {"net_arch": config.pop("net_arch")}
    model = TD3("MlpPolicy", env, policy_kwargs=policy_kwargs, device="cpu", seed=seed, **config)
    eval_env = gym.make(ENV_ID)
    evals: list[tuple[int, float]] = []

    def evaluate(step: int) -> None:
        returns = []
        for episode in range(eval_episodes):
            obs, _ = eval_env.reset(seed=seed + EVAL_SEED_OFFSET + episode)
            total, done = 0.0, False
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, reward, terminated, truncated, _ = eval_env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        evals.append((step, float(np.mean(returns))))
        print(f"SB3 TD3 seed {seed}: {step} steps, eval {evals[-1][1]:.1f}", file=sys.stderr)

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % eval_every == 0:
                evaluate(self.num_timesteps)
            return True

    start = time.perf_counter()
    model.learn(total_timesteps=total_steps, callback=Evaluate())
    wall_s = time.perf_counter() - start
    return {"env_steps": int(model.num_timesteps), "wall_s": wall_s, "evals": evals}


def run_seed(python: str, sb3: dict[str, Any], seed: int) -> Any:
    """One seed in the SB3 interpreter; its figures as a ``BenchmarkRun``."""
    from parl.utils.results import BenchmarkRun

    from benchmarks._report import ROOT, commit, machine

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    worker = [python, "-m", "benchmarks.ac.sb3_td3", "--worker", json.dumps(sb3)]
    out = subprocess.run(
        [*worker, "--seeds", str(seed)], cwd=ROOT, env=env, stdout=subprocess.PIPE, check=True
    )
    figures = json.loads(out.stdout.decode().strip().splitlines()[-1])
    evals = [(int(step), float(value)) for step, value in figures["evals"]]
    best_step, best = max(evals, key=lambda e: (e[1], -e[0]), default=(None, None))
    target = sb3["target"]
    reached = [step for step, value in evals if target is not None and value >= target]
    versions = subprocess.run(
        [
            python,
            "-c",
            "import stable_baselines3, torch; print(stable_baselines3.__version__, "
            "torch.__version__)",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return BenchmarkRun(
        env_id=ENV_ID,
        seed=seed,
        env_steps=figures["env_steps"],
        wall_s=figures["wall_s"],
        sps=figures["env_steps"] / figures["wall_s"],
        final_eval_return=evals[-1][1] if evals else None,
        best_eval_return=best,
        best_eval_step=best_step,
        target=target,
        first_target_step=reached[0] if reached else None,
        evals=evals,
        command=f"python -m benchmarks.ac.sb3_td3 --sb3-python <sb3 venv> --seeds {seed}",
        commit=commit(),
        machine=f"{machine()}, stable-baselines3 {versions[0]}, torch {versions[1]}",
    )


def main(argv: list[str] | None = None) -> int:
    """Train the seeds with SB3, merge them into the results file, write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sb3-python", help="interpreter of a venv with stable-baselines3")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # SB3's settings, as JSON
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(train_sb3(json.loads(args.worker), args.seeds[0])))
        return 0
    if not args.sb3_python:
        parser.error("--sb3-python is required: the interpreter of a venv with stable-baselines3")
    from benchmarks.run import record

    settings, sb3 = sb3_settings()
    runs = [run_seed(args.sb3_python, sb3, seed) for seed in args.seeds]
    record(ALGO, ENV_ID, settings | {"sb3": sb3}, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
