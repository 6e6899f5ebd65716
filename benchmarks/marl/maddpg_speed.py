"""Env steps per second of our MADDPG against PARL 2.2.1's ``parl.algorithms.MADDPG``.

Both sides run the same loop in this file (:func:`run_loop`) on the same env, mpe2's
``simple_spread_v3`` (3 agents, discrete actions, ``local_ratio=0``, 25-step episodes; PARL's
settings), with PARL's MADDPG settings: one 64-64 actor and critic per agent, Adam 1e-2, gamma
0.95, tau 0.01, batches of 1024, one replay memory per agent. Each env step samples every
agent's action, stores one transition per agent and calls every agent's ``learn``; an agent
learns on every ``learn_every``-th call once its memory holds ``min_memory_size`` transitions.

- ours: ``parl_algos_marl.MADDPG`` and ``MADDPGAgent`` with ``MAModel``;
- PARL 2.2.1: ``parl.algorithms.MADDPG`` with an agent and model written here with PARL 2.2.1's
  API as its ``examples/MADDPG`` uses it (its ``ReplayMemory``, numpy-to-tensor conversion in
  the agent, the target actions computed by the agent).

Each side trains in its own interpreter (PARL 2.2.1 owns ``parl/__init__.py``); the PARL 2.2.1
venv is built as ``benchmarks/sb3_speed.py`` says, plus the env::

    uv venv /tmp/parl221 && VIRTUAL_ENV=/tmp/parl221 uv pip install --no-deps parl==2.2.1 \\
        && VIRTUAL_ENV=/tmp/parl221 uv pip install paddlepaddle "setuptools<80" protobuf==3.20.3 \\
        six grpcio pynvml gymnasium numpy termcolor tensorboardX pyzmq cloudpickle psutil \\
        click flask flask_cors requests scipy mpe2 pettingzoo
    python -m benchmarks.marl.maddpg_speed --parl221-python /tmp/parl221/bin/python

Writes ``benchmarks/marl/maddpg-speed.md``: env steps/s (wall and per CPU second, both timed
from the first env step to the last learn step) of every side in every repeat, the sides
alternating, and the ratio ours / PARL 2.2.1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SETTINGS: dict[str, Any] = {
    "gamma": 0.95,
    "tau": 0.01,
    "actor_lr": 1e-2,
    "critic_lr": 1e-2,
    "batch_size": 1024,
    "memory_size": 1_000_000,
}
SIDES = {"parl": "ours", "parl221": "PARL 2.2.1"}


def make_env() -> Any:
    """simple_spread as PARL 2.x builds it: 3 agents, discrete actions, 25 cycles."""
    from mpe2 import simple_spread_v3

    return simple_spread_v3.parallel_env(N=3, local_ratio=0, max_cycles=25)


def agent_sizes(env: Any) -> tuple[list[int], list[int], int, list[Any]]:
    """Each agent's observation and action sizes, the critics' input size (every observation
    and action), and the action spaces: what both MADDPG classes are built from."""
    names = env.possible_agents
    obs_dims = [env.observation_space(n).shape[0] for n in names]
    act_dims = [int(env.action_space(n).n) for n in names]
    return obs_dims, act_dims, sum(obs_dims) + sum(act_dims), [env.action_space(n) for n in names]


def maddpg_options() -> dict[str, Any]:
    """The MADDPG constructor's hyperparameters, the same for both classes."""
    return {key: SETTINGS[key] for key in ("gamma", "tau", "actor_lr", "critic_lr")}


def run_loop(
    env: Any, agents: Sequence[Any], steps: int, to_env: Callable[[Any], int]
) -> dict[str, Any]:
    """``steps`` env steps of PARL's MADDPG loop; the figures of the timed part."""
    names = env.possible_agents
    observations, _ = env.reset(seed=0)
    obs_n = [observations[name] for name in names]
    learn_steps = 0
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        act_n = [agent.sample(obs) for agent, obs in zip(agents, obs_n, strict=True)]
        actions = {name: to_env(act) for name, act in zip(names, act_n, strict=True)}
        observations, rewards, terminations, truncations, _ = env.step(actions)
        next_obs_n = [observations[name] for name in names]
        for i, agent in enumerate(agents):
            name = names[i]
            agent.add_experience(
                obs_n[i], act_n[i], rewards[name], next_obs_n[i], terminations[name]
            )
        obs_n = next_obs_n
        if all(terminations[n] or truncations[n] for n in names):
            observations, _ = env.reset()
            obs_n = [observations[name] for name in names]
        learn_steps += sum(agent.learn(agents) is not None for agent in agents)
    return {
        "env_steps": steps,
        "learn_steps": learn_steps,
        "wall_s": time.perf_counter() - start_wall,
        "cpu_s": time.process_time() - start_cpu,
    }


def _ours(steps: int, learn_every: int, min_memory_size: int) -> dict[str, Any]:
    import parl

    import numpy as np

    from parl_algos_marl import MADDPG, MADDPGAgent, MAModel

    parl.set_seed(0)
    env = make_env()
    obs_dims, act_dims, critic_in, spaces = agent_sizes(env)
    agents = []
    for i in range(len(obs_dims)):
        model = MAModel(obs_dims[i], act_dims[i], critic_in)
        alg = MADDPG(model, agent_index=i, act_space=spaces, **maddpg_options())
        agents.append(
            MADDPGAgent(
                alg,
                obs_dims,
                act_dims,
                batch_size=SETTINGS["batch_size"],
                memory_size=SETTINGS["memory_size"],
                min_memory_size=min_memory_size,
                learn_every=learn_every,
                seed=i,
            )
        )
    return run_loop(env, agents, steps, lambda act: int(np.argmax(act)))


def _parl221(steps: int, learn_every: int, min_memory_size: int) -> dict[str, Any]:
    """PARL 2.2.1's MADDPG class, with an agent and model written with its API."""
    import parl
    from parl.algorithms import MADDPG
    from parl.utils import ReplayMemory

    import numpy as np
    import paddle
    import paddle.nn.functional as F

    paddle.seed(0)
    np.random.seed(0)

    def linear(fan_in: int, fan_out: int) -> Any:
        init = paddle.ParamAttr(initializer=paddle.nn.initializer.XavierUniform())
        return paddle.nn.Linear(fan_in, fan_out, weight_attr=init)

    class Model(parl.Model):  # type: ignore[misc]
        def __init__(self, obs_dim: int, act_dim: int, critic_in_dim: int) -> None:
            super().__init__()
            self.actor = paddle.nn.LayerList([linear(obs_dim, 64), linear(64, 64)])
            self.actor_out = linear(64, act_dim)
            self.critic = paddle.nn.LayerList([linear(critic_in_dim, 64), linear(64, 64)])
            self.critic_out = linear(64, 1)

        def policy(self, obs: Any) -> Any:
            for layer in self.actor:
                obs = F.relu(layer(obs))
            return self.actor_out(obs)

        def value(self, obs_n: Any, act_n: Any) -> Any:
            x = paddle.concat(obs_n + act_n, axis=1)
            for layer in self.critic:
                x = F.relu(layer(x))
            return paddle.squeeze(self.critic_out(x), axis=1)

        def get_actor_params(self) -> Any:
            return [*self.actor.parameters(), *self.actor_out.parameters()]

        def get_critic_params(self) -> Any:
            return [*self.critic.parameters(), *self.critic_out.parameters()]

    class Agent(parl.Agent):  # type: ignore[misc]
        def __init__(self, alg: Any, index: int, obs_dims: list[int], act_dims: list[int]):
            super().__init__(alg)
            self.index, self.n = index, len(act_dims)
            self.rpm = ReplayMemory(SETTINGS["memory_size"], obs_dims[index], act_dims[index])
            self.calls = 0
            self.alg.sync_target(decay=0)

        def sample(self, obs: Any) -> Any:
            obs = paddle.to_tensor(obs.reshape(1, -1), dtype="float32")
            return self.alg.sample(obs).numpy().flatten()

        def add_experience(self, obs: Any, act: Any, reward: Any, next_obs: Any, done: Any):
            self.rpm.append(obs, act, reward, next_obs, done)

        def learn(self, agents: list[Any]) -> float | None:
            self.calls += 1
            if self.calls % learn_every or self.rpm.size() < min_memory_size:
                return None
            index = self.rpm.make_index(SETTINGS["batch_size"])
            obs_n, act_n, next_obs_n = [], [], []
            for agent in agents:
                obs, act, _, next_obs, _ = agent.rpm.sample_batch_by_index(index)
                obs_n.append(paddle.to_tensor(obs, dtype="float32"))
                act_n.append(paddle.to_tensor(act, dtype="float32"))
                next_obs_n.append(paddle.to_tensor(next_obs, dtype="float32"))
            _, _, reward, _, done = self.rpm.sample_batch_by_index(index)
            target_act_n = [
                agent.alg.sample(next_obs, use_target_model=True).detach()
                for agent, next_obs in zip(agents, next_obs_n, strict=True)
            ]
            target_q_next = self.alg.Q(next_obs_n, target_act_n, use_target_model=True)
            reward_t = paddle.to_tensor(reward, dtype="float32")
            done_t = paddle.to_tensor(done, dtype="float32")
            target_q = reward_t + SETTINGS["gamma"] * (1.0 - done_t) * target_q_next.detach()
            return float(self.alg.learn(obs_n, act_n, target_q))

    env = make_env()
    obs_dims, act_dims, critic_in, spaces = agent_sizes(env)
    agents = []
    for i in range(len(obs_dims)):
        model = Model(obs_dims[i], act_dims[i], critic_in)
        alg = MADDPG(model, agent_index=i, act_space=spaces, **maddpg_options())
        agents.append(Agent(alg, i, obs_dims, act_dims))
    return run_loop(env, agents, steps, lambda act: int(np.argmax(act)))


RUNNERS = {"parl": _ours, "parl221": _parl221}


def measure(python: str, side: str, steps: int, learn_every: int, min_memory: int) -> dict:
    """Run one side in a fresh interpreter; return its figures with env steps/s."""
    env = dict(os.environ)
    if side == "parl221":  # our packages on PYTHONPATH would shadow PARL 2.2.1's parl
        env.pop("PYTHONPATH", None)
        env["PARL_BACKEND"] = "paddle"
    command = [python, __file__, "--side", side, "--steps", str(steps)]
    command += ["--learn-every", str(learn_every), "--min-memory-size", str(min_memory)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=3600, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{side} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["sps"] = result["env_steps"] / result["wall_s"]
    result["cpu_sps"] = result["env_steps"] / result["cpu_s"]
    return result


def report(runs: list[dict[str, dict]], args: argparse.Namespace, command: str) -> str:
    """The Markdown results: per repeat and side, env steps/s, and the ratios."""
    from benchmarks._report import commit, machine

    lines = [
        "# MADDPG speed: ours against PARL 2.2.1's MADDPG class",
        "",
        f"- command: `{command}`",
        f"- commit: `{commit()}`",
        f"- machine: {machine()}",
        f"- loop: {args.steps} env steps of mpe2 simple_spread_v3 (3 agents, discrete), "
        f"learn every {args.learn_every} calls per agent after {args.min_memory_size} "
        f"transitions, batches of {SETTINGS['batch_size']}; the rest is PARL's settings",
        "- the machine is shared with other jobs: wall-clock figures are noisy; the figures per "
        "CPU second of the process are steadier",
        "",
        "| repeat | side | learn steps | wall s | env steps/s | env steps per CPU s |",
        "|---|---|---|---|---|---|",
    ]
    for i, run in enumerate(runs):
        for side, r in run.items():
            lines.append(
                f"| {i} | {SIDES[side]} | {r['learn_steps']} | {r['wall_s']:.1f} | "
                f"{r['sps']:.1f} | {r['cpu_sps']:.1f} |"
            )
    wall = [run["parl"]["sps"] / run["parl221"]["sps"] for run in runs]
    cpu = [run["parl"]["cpu_sps"] / run["parl221"]["cpu_sps"] for run in runs]
    lines += [
        "",
        f"Ratio ours / PARL 2.2.1: {', '.join(f'{r:.2f}×' for r in wall)} (wall), "
        f"{', '.join(f'{r:.2f}×' for r in cpu)} (per CPU second).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parl221-python", help="the PARL 2.2.1 venv's interpreter")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--learn-every", type=int, default=25)
    parser.add_argument("--min-memory-size", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default=str(HERE / "maddpg-speed.md"))
    parser.add_argument("--side", choices=list(RUNNERS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        result = RUNNERS[args.side](args.steps, args.learn_every, args.min_memory_size)
        print(json.dumps(result))
        return
    if not args.parl221_python:
        parser.error("--parl221-python is required (build the venv as the module doc says)")
    runs = []
    for repeat in range(args.repeats):
        order = ["parl", "parl221"] if repeat % 2 == 0 else ["parl221", "parl"]
        pythons = {"parl": sys.executable, "parl221": args.parl221_python}
        run = {}
        for side in order:
            run[side] = measure(
                pythons[side], side, args.steps, args.learn_every, args.min_memory_size
            )
            print(f"{SIDES[side]}: {run[side]['sps']:.1f} env steps/s", flush=True)
        runs.append(run)
    command = "python -m benchmarks.marl.maddpg_speed " + " ".join(sys.argv[1:])
    Path(args.out).write_text(report(runs, args, command))
    print(Path(args.out).read_text())


if __name__ == "__main__":
    main()
