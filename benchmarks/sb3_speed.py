"""Env steps per second of PARL against Stable-Baselines3, same env, network and hyperparameters.

Each side trains in its own subprocess (torch and paddle never share a process), so SB3 may live
in a separate venv::

    uv venv /tmp/sb3 && VIRTUAL_ENV=/tmp/sb3 uv pip install stable-baselines3 gymnasium
    python benchmarks/sb3_speed.py --sb3-python /tmp/sb3/bin/python [--steps 50000]

Writes ``benchmarks/results/sb3-speed.md``. PARL's runs include one final greedy evaluation
(10 episodes); SB3's include none, which favours SB3.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ENV_ID = "CartPole-v1"

# The PARL benchmark configs (benchmarks/pg/ppo.py, benchmarks/dqn/dqn.py) in SB3's terms.
SB3_PPO = {
    "n_envs": 8,
    "n_steps": 32,
    "batch_size": 256,
    "n_epochs": 20,
    "learning_rate": 1e-3,
    "gamma": 0.98,
    "gae_lambda": 0.8,
    "clip_range": 0.2,
    "ent_coef": 0.0,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
    "net_arch": {"pi": [64, 64], "vf": [64, 64]},
}
SB3_DQN = {
    "n_envs": 4,
    "learning_rate": 1.5e-3,
    "batch_size": 64,
    "buffer_size": 100_000,
    "learning_starts": 1_000,
    "gamma": 0.99,
    # SB3 counts train_freq in vector steps: 64 steps of 4 envs = PARL's 256 env steps.
    "train_freq": 64,
    "gradient_steps": 128,
    # One target sync per training round, as PARL's target_update_interval=128 learn steps.
    "target_update_interval": 256,
    "exploration_fraction": 0.16,
    "exploration_final_eps": 0.04,
    "max_grad_norm": 10.0,
    "net_arch": [256, 256],
}


def run_parl(algo: str, steps: int) -> dict[str, Any]:
    """Train PARL's example with the benchmark config; return env steps and wall seconds."""
    from _report import load_example

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as logdir:
        if algo == "PPO":
            result = load_example("PPO").train(
                ENV_ID, 0, logdir=logdir, quiet=True, total_steps=steps, eval_every=10 * steps
            )
        else:
            result = load_example("DQN").train(
                env_id=ENV_ID,
                total_steps=steps,
                eval_interval=10 * steps,
                logdir=logdir,
                progress=False,
            )
    return {"env_steps": result["env_steps"], "wall_s": time.perf_counter() - start}


def run_sb3(algo: str, steps: int) -> dict[str, Any]:
    """Train SB3 with the same settings on CPU; return env steps and wall seconds."""
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.env_util import make_vec_env

    config = dict(SB3_PPO if algo == "PPO" else SB3_DQN)
    env = make_vec_env(ENV_ID, n_envs=config.pop("n_envs"), seed=0)
    policy_kwargs = {"net_arch": config.pop("net_arch")}
    if algo == "PPO":
        initial = config.pop("learning_rate")
        model: Any = PPO(
            "MlpPolicy",
            env,
            learning_rate=lambda remaining: initial * remaining,
            policy_kwargs=policy_kwargs,
            device="cpu",
            seed=0,
            **config,
        )
    else:
        model = DQN("MlpPolicy", env, policy_kwargs=policy_kwargs, device="cpu", seed=0, **config)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return {"env_steps": int(model.num_timesteps), "wall_s": time.perf_counter() - start}


def measure(python: str, side: str, algo: str, steps: int) -> dict[str, Any]:
    out = subprocess.run(
        [python, __file__, "--side", side, "--algo", algo, "--steps", str(steps)],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{side} {algo} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["sps"] = result["env_steps"] / result["wall_s"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sb3-python", default=sys.executable, help="interpreter with SB3")
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--algos", nargs="+", default=["PPO", "DQN"], choices=["PPO", "DQN"])
    parser.add_argument("--side", choices=["parl", "sb3"], help=argparse.SUPPRESS)
    parser.add_argument("--algo", choices=["PPO", "DQN"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        runner = run_parl if args.side == "parl" else run_sb3
        print(json.dumps(runner(args.algo, args.steps)))
        return

    from _report import header, markdown_table

    rows = []
    for algo in args.algos:
        parl_result = measure(sys.executable, "parl", algo, args.steps)
        sb3_result = measure(args.sb3_python, "sb3", algo, args.steps)
        ratio = parl_result["sps"] / sb3_result["sps"]
        rows.append(
            [
                f"{algo} {ENV_ID}",
                f"{parl_result['sps']:.0f} ({parl_result['wall_s']:.1f} s)",
                f"{sb3_result['sps']:.0f} ({sb3_result['wall_s']:.1f} s)",
                f"{ratio:.2f}×",
            ]
        )
        print(rows[-1], flush=True)
    table = markdown_table(
        ["algorithm", "PARL env steps/s (wall)", "SB3 env steps/s (wall)", "PARL / SB3"], rows
    )
    text = (
        header("PARL vs Stable-Baselines3: env steps per second")
        + f"- env steps per run: {args.steps}; same hyperparameters and network "
        "(see SB3_PPO / SB3_DQN in the script); SB3 on CPU torch\n\n" + table + "\n"
    )
    out = HERE / "results" / "sb3-speed.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
