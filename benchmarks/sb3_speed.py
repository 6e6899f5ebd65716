"""Env steps per second of PARL against Stable-Baselines3 and PARL 2.2.1, same env, network and
hyperparameters, the same number of gradient steps.

Shape: one config per algorithm (``CONFIGS``, in SB3's terms), and per *side* (a framework) one
runner per algorithm (``RUNNERS[side][algo]``). Each side trains in its own subprocess (torch and
paddle never share a process, and PARL 2.2.1 owns ``parl/__init__.py``), so SB3 and PARL 2.2.1
live in their own venvs; a side whose interpreter is not given is left out::

    uv venv /tmp/sb3 && VIRTUAL_ENV=/tmp/sb3 uv pip install stable-baselines3 gymnasium
    uv venv /tmp/parl221 && VIRTUAL_ENV=/tmp/parl221 uv pip install --no-deps parl==2.2.1 \\
        && VIRTUAL_ENV=/tmp/parl221 uv pip install paddlepaddle "setuptools<80" protobuf==3.20.3 \\
        six grpcio pynvml gymnasium numpy termcolor tensorboardX pyzmq cloudpickle psutil \\
        click flask flask_cors requests scipy
    python -m benchmarks.sb3_speed --sb3-python /tmp/sb3/bin/python \\
        --parl221-python /tmp/parl221/bin/python [--steps 50000] [--repeats 3]

SAC and TD3 (``--algos SAC TD3``) are timed on Pendulum-v1 and HalfCheetah-v5 (``--envs`` picks;
the SB3 venv then needs ``gymnasium[mujoco]``) with 256-256 networks, SB3 and ours only.

``--torch`` adds ours on torch (the side ``parl_torch``: the same examples with ``--backend torch
--device cpu``, in this interpreter, which then needs torch's CPU build) for PPO, DQN and SAC,
and the ratio of ours on torch to SB3. Without it the side is left out.

Writes ``benchmarks/results/sb3-speed.md``: per algorithm and env, the env steps/s of every side in
every repeat (sides alternate within a repeat) and the ratios of ours to SB3 and to PARL 2.2.1,
with their range over the repeats. Every side is timed from its first env step to its last
gradient step, setup excluded; ours include one final greedy evaluation (10 episodes), the
others none, which favours them. The PARL 2.2.1 side (``_parl221_ppo``,
``_parl221_dqn``) is our own training loop written with PARL 2.2.1's API as its examples use
it: ``parl.algorithms.PPO``/``DQN``, its ``ReplayMemory``, numpy-to-tensor conversion in the
agent's ``learn``; its DQN has no Huber loss and no gradient clipping, so it does a little
less work per step than the other two.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

ENV_ID = "CartPole-v1"  # PPO's and DQN's

# The PARL benchmark configs (benchmarks/pg/ppo.py, benchmarks/dqn/dqn.py) in SB3's terms.
# PPO's 20 epochs of one full-batch step (batch_size = n_envs * n_steps) make 20 gradient
# steps per rollout on every side.
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


# SAC and TD3 as examples/SAC/train.py trains them (its DEFAULTS for Pendulum-v1), at the
# 256-256 networks of the speed bullet: one gradient step per env step after
# learning_starts uniformly random steps, batches of 256, Polyak rate 0.005.
SB3_SAC = {
    "learning_rate": 1e-3,
    "buffer_size": 1_000_000,
    "learning_starts": 1_000,
    "batch_size": 256,
    "tau": 0.005,
    "gamma": 0.99,
    "train_freq": 1,
    "gradient_steps": 1,
    "ent_coef": "auto",  # learnt log-alpha, target entropy -act_dim, alpha's lr = learning_rate
    "net_arch": [256, 256],
}
SB3_TD3 = {
    "learning_rate": 1e-3,
    "buffer_size": 1_000_000,
    "learning_starts": 1_000,
    "batch_size": 256,
    "tau": 0.005,
    "gamma": 0.98,
    "train_freq": 1,
    "gradient_steps": 1,
    "policy_delay": 2,
    "target_policy_noise": 0.2,
    "target_noise_clip": 0.5,
    "action_noise_sigma": 0.1,  # Gaussian exploration noise (ours: expl_noise)
    "net_arch": [256, 256],
}

CONFIGS: dict[str, dict[str, Any]] = {
    "PPO": SB3_PPO,
    "DQN": SB3_DQN,
    "SAC": SB3_SAC,
    "TD3": SB3_TD3,
}
#: The environments each algorithm is timed on (HalfCheetah-v5 needs ``gymnasium[mujoco]``).
ENVS: dict[str, list[str]] = {
    "PPO": [ENV_ID],
    "DQN": [ENV_ID],
    "SAC": ["Pendulum-v1", "HalfCheetah-v5"],
    "TD3": ["Pendulum-v1", "HalfCheetah-v5"],
}
SIDES = {"sb3": "SB3", "parl221": "PARL 2.2.1", "parl": "ours", "parl_torch": "ours on torch"}
#: The algorithms ours runs on torch (``--torch``).
TORCH_ALGOS = ("PPO", "DQN", "SAC")


def ac_train_kwargs(algo: str, env_id: str, steps: int, logdir: str) -> dict[str, Any]:
    """``examples/SAC/train.py``'s arguments for SAC or TD3 with the shared config (the
    profile in ``speed_profile.py`` runs the same)."""
    cfg = CONFIGS[algo]
    return {
        "env_id": env_id,
        "algo": algo,
        "total_steps": steps,
        "hidden_sizes": tuple(cfg["net_arch"]),
        "lr": cfg["learning_rate"],
        "gamma": cfg["gamma"],
        "tau": cfg["tau"],
        "expl_noise": cfg.get("action_noise_sigma", 0.1),
        "buffer_size": cfg["buffer_size"],
        "batch_size": cfg["batch_size"],
        "learning_starts": cfg["learning_starts"],
        "eval_every": 10 * steps,
        "eval_episodes": 1,
        "logdir": logdir,
        "quiet": True,
    }


def _ours(algo: str, steps: int, env_id: str = ENV_ID, backend: str = "paddle") -> dict[str, Any]:
    """Train our example with the benchmark config; time it from its first env step.

    The time includes the example's final greedy evaluation (PPO, DQN: 10 episodes; SAC, TD3:
    one episode), not its setup. ``backend="torch"`` trains the torch classes on the CPU.
    """
    from benchmarks._report import load_example

    on = {"backend": backend, "device": "cpu"}
    with tempfile.TemporaryDirectory() as logdir:
        if algo in ("SAC", "TD3"):  # examples/TD3/train.py is examples/SAC/train.py's loop
            example = load_example("SAC")
            cpu = time.process_time()
            kwargs = ac_train_kwargs(algo, env_id, steps, logdir) | on
            result = example.train(example.Args(**kwargs))
            cpu_s = time.process_time() - cpu  # incl. building the envs and the agent
            return {"env_steps": result.env_steps, "wall_s": result.wall_s, "cpu_s": cpu_s}
        example = load_example(algo)
        args = example.Args(
            env_id=ENV_ID, total_steps=steps, eval_every=10 * steps, logdir=logdir, quiet=True, **on
        )
        result = example.train(args)
    return {"env_steps": result.env_steps, "wall_s": result.wall_s}


def _sb3(
    algo: str,
    steps: int,
    env_id: str = ENV_ID,
    *,
    device: str = "cpu",
    overrides: dict[str, Any] | None = None,
    callback: Any = None,
) -> dict[str, Any]:
    """Train SB3 with the same settings (``overrides`` on top) on ``device``; return env steps
    and wall seconds. ``callback`` is SB3's, passed to ``learn``."""
    from stable_baselines3 import DQN, PPO, SAC, TD3
    from stable_baselines3.common.env_util import make_vec_env

    config = dict(CONFIGS[algo]) | (overrides or {})
    env = make_vec_env(env_id, n_envs=config.pop("n_envs", 1), seed=0)
    policy_kwargs = {"net_arch": config.pop("net_arch")}
    if algo in ("SAC", "TD3"):
        if algo == "TD3":
            import numpy as np
            from stable_baselines3.common.noise import NormalActionNoise

            act_dim = env.action_space.shape[0]
            sigma = config.pop("action_noise_sigma") * np.ones(act_dim)
            config["action_noise"] = NormalActionNoise(np.zeros(act_dim), sigma)
        cls = SAC if algo == "SAC" else TD3
        model: Any = cls(
            "MlpPolicy", env, policy_kwargs=policy_kwargs, device=device, seed=0, **config
        )
    elif algo == "PPO":
        initial = config.pop("learning_rate")
        model = PPO(
            "MlpPolicy",
            env,
            learning_rate=lambda remaining: initial * remaining,
            policy_kwargs=policy_kwargs,
            device=device,
            seed=0,
            **config,
        )
    else:
        model = DQN("MlpPolicy", env, policy_kwargs=policy_kwargs, device=device, seed=0, **config)
    start, cpu = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps, callback=callback)
    wall_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    return {"env_steps": int(model.num_timesteps), "wall_s": wall_s, "cpu_s": cpu_s}


def _parl221_mlp(in_dim: int, out_dim: int, hidden: list[int], activation: Any) -> Any:
    import paddle

    layers: list[Any] = []
    for size in hidden:
        layers += [paddle.nn.Linear(in_dim, size), activation()]
        in_dim = size
    return paddle.nn.Sequential(*layers, paddle.nn.Linear(in_dim, out_dim))


def _parl221_ppo(steps: int) -> dict[str, Any]:
    """PPO with PARL 2.2.1's ``parl.algorithms.PPO``, laid out as its CartPole example."""
    import parl
    from parl.algorithms import PPO

    import gymnasium as gym
    import numpy as np
    import paddle

    cfg = CONFIGS["PPO"]
    paddle.seed(0)
    np.random.seed(0)

    class Model(parl.Model):  # type: ignore[misc]
        def __init__(self, obs_dim: int, act_dim: int) -> None:
            super().__init__()
            self.actor = _parl221_mlp(obs_dim, act_dim, cfg["net_arch"]["pi"], paddle.nn.Tanh)
            self.critic = _parl221_mlp(obs_dim, 1, cfg["net_arch"]["vf"], paddle.nn.Tanh)

        def value(self, obs: Any) -> Any:
            return self.critic(obs)

        def policy(self, obs: Any) -> Any:
            return self.actor(obs)

    class Agent(parl.Agent):  # type: ignore[misc]
        def sample(self, obs: Any) -> tuple[Any, Any, Any]:
            value, action, logp, _ = self.alg.sample(paddle.to_tensor(obs, dtype="float32"))
            return value.numpy().reshape(-1), action.numpy().reshape(-1), logp.numpy().reshape(-1)

        def value(self, obs: Any) -> Any:
            return self.alg.value(paddle.to_tensor(obs, dtype="float32")).numpy().reshape(-1)

        def learn(self, batch: list[Any], lr: float) -> None:
            size = batch[0].shape[0]
            index = np.arange(size)
            for _ in range(cfg["n_epochs"]):
                np.random.shuffle(index)
                for start in range(0, size, cfg["batch_size"]):
                    part = index[start : start + cfg["batch_size"]]
                    tensors = [paddle.to_tensor(array[part]) for array in batch]
                    self.alg.learn(*tensors, lr=lr)

    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.make(ENV_ID)] * cfg["n_envs"],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    obs_space, act_space = envs.single_observation_space, envs.single_action_space
    assert isinstance(obs_space, gym.spaces.Box) and isinstance(act_space, gym.spaces.Discrete)
    obs_dim = obs_space.shape[0]
    model = Model(obs_dim, int(act_space.n))
    alg = PPO(
        model,
        clip_param=cfg["clip_range"],
        value_loss_coef=cfg["vf_coef"],
        entropy_coef=cfg["ent_coef"],
        initial_lr=cfg["learning_rate"],
        max_grad_norm=cfg["max_grad_norm"],
        use_clipped_value_loss=False,
    )
    agent = Agent(alg)
    n_envs, n_steps = cfg["n_envs"], cfg["n_steps"]
    updates = steps // (n_envs * n_steps)
    obs, _ = envs.reset(seed=0)
    start = time.perf_counter()
    for update in range(updates):
        shape = (n_steps, n_envs)
        buf_obs = np.zeros((*shape, obs_dim), np.float32)
        buf_act, buf_logp, buf_val, buf_rew, buf_done = (np.zeros(shape) for _ in range(5))
        for t in range(n_steps):
            value, action, logp = agent.sample(obs)
            buf_obs[t], buf_act[t], buf_logp[t], buf_val[t] = obs, action, logp, value
            obs, reward, terminated, truncated, _ = envs.step(action)
            buf_rew[t], buf_done[t] = reward, terminated | truncated
        next_value, adv, last = agent.value(obs), np.zeros(shape), 0.0
        for t in reversed(range(n_steps)):
            following = next_value if t == n_steps - 1 else buf_val[t + 1]
            delta = buf_rew[t] + cfg["gamma"] * following * (1 - buf_done[t]) - buf_val[t]
            last = delta + cfg["gamma"] * cfg["gae_lambda"] * (1 - buf_done[t]) * last
            adv[t] = last
        flat = [
            buf_obs.reshape(-1, obs_dim),
            buf_act.reshape(-1).astype(np.int64),
            *(a.reshape(-1).astype(np.float32) for a in (buf_val, adv + buf_val, buf_logp, adv)),
        ]
        agent.learn(flat, cfg["learning_rate"] * (1 - update / updates))
    return {"env_steps": updates * n_envs * n_steps, "wall_s": time.perf_counter() - start}


def _parl221_dqn(steps: int) -> dict[str, Any]:
    """DQN with PARL 2.2.1's ``parl.algorithms.DQN`` and ``ReplayMemory``, as its example."""
    import parl
    from parl.algorithms import DQN
    from parl.utils import ReplayMemory

    import gymnasium as gym
    import numpy as np
    import paddle

    cfg = CONFIGS["DQN"]
    paddle.seed(0)
    np.random.seed(0)

    class Model(parl.Model):  # type: ignore[misc]
        def __init__(self, obs_dim: int, act_dim: int) -> None:
            super().__init__()
            self.net = _parl221_mlp(obs_dim, act_dim, cfg["net_arch"], paddle.nn.ReLU)

        def forward(self, obs: Any) -> Any:
            return self.net(obs)

    class Agent(parl.Agent):  # type: ignore[misc]
        def __init__(self, algorithm: Any, act_dim: int) -> None:
            super().__init__(algorithm)
            self.act_dim, self.learn_steps = act_dim, 0

        def sample(self, obs: Any, epsilon: float) -> Any:
            q_values = self.alg.predict(paddle.to_tensor(obs, dtype="float32"))
            greedy = q_values.numpy().argmax(axis=-1)
            explore = np.random.random(greedy.shape) < epsilon
            return np.where(explore, np.random.randint(0, self.act_dim, greedy.shape), greedy)

        def learn(self, obs: Any, act: Any, reward: Any, next_obs: Any, terminal: Any) -> Any:
            if self.learn_steps % cfg["gradient_steps"] == 0:  # one sync per training round
                self.alg.sync_target()
            self.learn_steps += 1
            return self.alg.learn(
                paddle.to_tensor(obs, dtype="float32"),
                paddle.to_tensor(np.expand_dims(act, -1), dtype="int64"),
                paddle.to_tensor(np.expand_dims(reward, -1), dtype="float32"),
                paddle.to_tensor(next_obs, dtype="float32"),
                paddle.to_tensor(np.expand_dims(terminal, -1), dtype="float32"),
            )

    n_envs = cfg["n_envs"]
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.make(ENV_ID)] * n_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    obs_space, act_space = envs.single_observation_space, envs.single_action_space
    assert isinstance(obs_space, gym.spaces.Box) and isinstance(act_space, gym.spaces.Discrete)
    obs_dim, act_dim = obs_space.shape[0], int(act_space.n)
    alg = DQN(Model(obs_dim, act_dim), gamma=cfg["gamma"], lr=cfg["learning_rate"])
    agent = Agent(alg, act_dim)
    rpm = ReplayMemory(cfg["buffer_size"], obs_dim, 0)
    train_every = cfg["train_freq"] * n_envs
    decay_steps = cfg["exploration_fraction"] * steps
    next_train = max(train_every, cfg["learning_starts"])
    obs, _ = envs.reset(seed=0)
    env_steps = 0
    start = time.perf_counter()
    while env_steps < steps:
        epsilon = max(cfg["exploration_final_eps"], 1.0 - env_steps / decay_steps)
        action = agent.sample(obs, epsilon)
        next_obs, reward, terminated, _, info = envs.step(action)
        final = next_obs.copy()  # same-step autoreset: stored transitions end in final_obs
        for done in np.flatnonzero(info.get("_final_obs", [])):
            final[done] = info["final_obs"][done]
        for i in range(n_envs):
            rpm.append(obs[i], action[i], reward[i], final[i], terminated[i])
        obs, env_steps = next_obs, env_steps + n_envs
        if env_steps >= next_train:
            next_train += train_every
            for _ in range(cfg["gradient_steps"]):
                agent.learn(*rpm.sample_batch(cfg["batch_size"]))
    return {"env_steps": env_steps, "wall_s": time.perf_counter() - start}


def _side(
    run: Callable[..., dict[str, Any]], algo: str, **options: Any
) -> Callable[[int, str], dict[str, Any]]:
    return lambda steps, env_id: run(algo, steps, env_id, **options)


#: ``RUNNERS[side][algo](steps, env_id)``; PARL 2.2.1 has no SAC/TD3 runner (not timed).
RUNNERS: dict[str, dict[str, Callable[[int, str], dict[str, Any]]]] = {
    "parl": {algo: _side(_ours, algo) for algo in CONFIGS},
    "parl_torch": {algo: _side(_ours, algo, backend="torch") for algo in TORCH_ALGOS},
    "sb3": {algo: _side(_sb3, algo) for algo in CONFIGS},
    "parl221": {
        "PPO": lambda steps, env_id: _parl221_ppo(steps),
        "DQN": lambda steps, env_id: _parl221_dqn(steps),
    },
}


def measure(python: str, side: str, algo: str, steps: int, env_id: str = ENV_ID) -> dict[str, Any]:
    """Run one side's runner in a fresh interpreter; return its figures and env steps/s."""
    env = dict(os.environ)
    if side not in ("parl", "parl_torch"):  # ours on PYTHONPATH would shadow PARL 2.2.1's parl
        env.pop("PYTHONPATH", None)
    if side == "parl221":
        env["PARL_BACKEND"] = "paddle"
    out = subprocess.run(
        [python, __file__, "--side", side, "--algo", algo, "--env", env_id, "--steps", str(steps)],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
        env=env,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{side} {algo} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["sps"] = result["env_steps"] / result["wall_s"]
    if "cpu_s" in result:  # SAC, TD3: process CPU time, far steadier than wall on a busy machine
        result["cpu_sps"] = result["env_steps"] / result["cpu_s"]
    return result


def _cell(runs: dict[str, dict[str, Any]], side: str) -> str:
    """One side's env steps/s (and per CPU second where measured) in a per-run row."""
    if side not in runs:
        return "–"
    cpu = runs[side].get("cpu_sps")
    return f"{runs[side]['sps']:.1f}" + (f" ({cpu:.1f} per CPU s)" if cpu else "")


def _span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.2f}×" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f}×"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sb3-python", default=sys.executable, help="interpreter with SB3")
    parser.add_argument("--parl221-python", help="interpreter with PARL 2.2.1 (else skipped)")
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=1, help="runs of every side")
    parser.add_argument("--algos", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--envs", nargs="+", help="only these of each algorithm's ENVS")
    parser.add_argument("--torch", action="store_true", help="add ours on torch (PPO, DQN, SAC)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "sb3-speed.md")
    parser.add_argument("--side", choices=list(RUNNERS), help=argparse.SUPPRESS)
    parser.add_argument("--algo", choices=list(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--env", default=ENV_ID, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(RUNNERS[args.side][args.algo](args.steps, args.env)))
        return

    from benchmarks._report import header, markdown_table

    pythons = {
        "sb3": args.sb3_python,
        "parl221": args.parl221_python,
        "parl": sys.executable,
        "parl_torch": sys.executable if args.torch else None,
    }
    sides = [side for side in SIDES if pythons[side]]
    rows, summary = [], []
    cases = [(algo, env) for algo in args.algos for env in ENVS[algo]]
    cases = [(algo, env) for algo, env in cases if not args.envs or env in args.envs]
    for algo, env_id in cases:
        timed = [side for side in sides if algo in RUNNERS[side]]
        ratios: dict[str, list[float]] = {side: [] for side in sides if side != "parl"}
        torch_ratios: list[float] = []
        cpu_ratios: dict[str, list[float]] = {}
        for repeat in range(args.repeats):
            order = timed if repeat % 2 == 0 else timed[::-1]  # alternate who runs first
            runs = {side: measure(pythons[side], side, algo, args.steps, env_id) for side in order}
            sps = {side: run["sps"] for side, run in runs.items()}
            if "parl_torch" in sps and "sb3" in sps:
                torch_ratios.append(sps["parl_torch"] / sps["sb3"])
            for other in ratios:
                if other in sps:
                    ratios[other].append(sps["parl"] / sps[other])
                if other in sps and "cpu_sps" in runs[other] and "cpu_sps" in runs["parl"]:
                    ratio = runs["parl"]["cpu_sps"] / runs[other]["cpu_sps"]
                    cpu_ratios.setdefault(other, []).append(ratio)
            rows.append([f"{algo} {env_id}", repeat + 1, *(_cell(runs, s) for s in sides)])
            print(rows[-1], flush=True)
        summary.append(
            [
                f"{algo} {env_id}",
                *(
                    (_span(v) if v else "–")
                    + (f" (CPU time: {_span(cpu_ratios[s])})" if s in cpu_ratios else "")
                    for s, v in ratios.items()
                ),
                *([_span(torch_ratios) if torch_ratios else "–"] if args.torch else []),
            ]
        )
    ratio_names = [f"ours / {SIDES[side]}" for side in sides if side != "parl"]
    ratio_names += ["ours on torch / SB3"] if args.torch else []
    text = (
        header("PARL vs Stable-Baselines3 and PARL 2.2.1: env steps per second")
        + f"- env steps per run: {args.steps}; same hyperparameters, network and number of "
        "gradient steps (see CONFIGS in the script); SB3 on CPU torch\n\n"
        + markdown_table(["algorithm", *ratio_names], summary)
        + "\n\nEnv steps per second of each run:\n\n"
        + markdown_table(["algorithm", "run", *(SIDES[side] for side in sides)], rows)
        + "\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
