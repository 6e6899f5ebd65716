"""Learner updates per second on torch: SAC, TD3, DQN and PPO; eager, captured and SB3; CPU and GPU.

The case of the torch backend's GPU path: one ``learn`` per update on a random batch that
already sits on the device (so the figure is the learner's, not the replay memory's or the
transfer's). SAC (automatic α) and TD3 with 256-256 networks on HalfCheetah's sizes (17
observations, 6 actions); DQN with a 256-256 Q-network on 8 observations and 4 actions; PPO's
minibatch step (clipped surrogate, Gaussian policy, 64-64) on HalfCheetah's sizes. Each device
runs its cases; a GPU is measured only where ``torch.cuda.is_available()``.

Sides: ``eager`` (ours as it is), ``captured`` (ours with ``compile=True``: the whole update
captured; a checkout without the option says so in its row), ``sb3`` (Stable-Baselines3's
``train(gradient_steps=1)`` on a buffer of random transitions, for PPO one epoch of one minibatch
of a random rollout, in the same process).

Run ``python -m benchmarks.torch_learner_speed [--algos SAC TD3 DQN PPO] [--compile] [--sb3]
[--batches 256 4096] [--updates 200] [--output FILE]`` (``--compile``, ``--sb3``: add those
sides; ``--sides`` names them all); it needs torch (``nox -s torch``'s environment, or any venv
with the families' ``[torch]`` extras) and, for ``sb3``, stable-baselines3.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks._report import header

OBS_DIM, ACT_DIM = 17, 6
DQN_OBS, DQN_ACTIONS = 8, 4
HIDDEN = (256, 256)
PPO_HIDDEN = 64
BATCHES = (256, 4096)
WARMUP = 10
ALGOS = ("SAC", "TD3", "DQN", "PPO")
SIDES = ("eager", "captured", "sb3")

Step = Callable[[], object]


def devices() -> list[str]:
    """The CPU, and the GPU where torch sees one."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(step: Step, updates: int, device: str) -> float:
    """Updates per second of ``step``, after a warm-up (which a captured update compiles in)."""
    for _ in range(WARMUP):
        step()
    _sync(device)
    start = time.perf_counter()
    for _ in range(updates):
        step()
    _sync(device)
    return updates / (time.perf_counter() - start)


def _random(batch: int, *shape: int, device: str, low: float | None = None) -> torch.Tensor:
    g = torch.Generator().manual_seed(batch + sum(shape))
    values = torch.rand(batch, *shape, generator=g) * 2 - 1 if low is not None else None
    return (values if values is not None else torch.randn(batch, *shape, generator=g)).to(device)


def _ours(algo: str, device: str, batch: int, options: dict[str, Any]) -> Step:
    """One update of our ``algo`` on a random batch on ``device``; ``options`` go to the
    algorithm (``compile=True`` for the captured side)."""
    torch.manual_seed(0)
    obs, next_obs = (_random(batch, OBS_DIM, device=device) for _ in range(2))
    reward, terminal = _random(batch, device=device), torch.zeros(batch, device=device)
    action = _random(batch, ACT_DIM, device=device, low=-1.0)
    if algo in ("SAC", "TD3"):
        from parl_algos_ac import SAC, TD3, DeterministicActorCritic, GaussianActorCritic

        model: Any
        if algo == "SAC":
            model = GaussianActorCritic(OBS_DIM, ACT_DIM, HIDDEN, backend="torch")
            alg: Any = SAC(model, alpha="auto", device=device, **options)
        else:
            model = DeterministicActorCritic(OBS_DIM, ACT_DIM, HIDDEN, 2, backend="torch")
            alg = TD3(model, device=device, **options)
        return lambda: alg.learn(obs, action, reward, next_obs, terminal)
    if algo == "DQN":
        from parl_algos_dqn import DQN, QNetwork

        dqn = DQN(QNetwork(DQN_OBS, DQN_ACTIONS, HIDDEN, backend="torch"), device=device, **options)
        obs, next_obs = obs[:, :DQN_OBS], next_obs[:, :DQN_OBS]
        index = torch.randint(0, DQN_ACTIONS, (batch,), generator=torch.Generator().manual_seed(0))
        index = index.to(device)
        return lambda: dqn.learn(obs, index, reward, next_obs, terminal)
    from parl_algos_pg import PPO, ContinuousPPOModel

    ppo = PPO(
        ContinuousPPOModel(OBS_DIM, ACT_DIM, PPO_HIDDEN, backend="torch"),
        clip_param=0.2,
        continuous_action=True,
        device=device,
        **options,
    )
    log_prob = -_random(batch, device=device).abs() - 5.0
    rows = (obs, action, reward, reward + 0.1, log_prob, _random(batch, device=device))
    return lambda: ppo.learn(*rows)


def _sb3(algo: str, device: str, batch: int) -> Step:
    """One update of Stable-Baselines3's ``algo`` with the same networks on ``device``."""
    import gymnasium as gym
    import stable_baselines3 as sb3

    discrete = algo == "DQN"
    obs_dim = DQN_OBS if discrete else OBS_DIM
    space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
    actions = gym.spaces.Discrete(DQN_ACTIONS) if discrete else gym.spaces.Box(-1, 1, (ACT_DIM,))

    class Sizes(gym.Env):  # never stepped: SB3 needs an env to build its networks
        observation_space, action_space = space, actions

        def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
            return np.zeros(obs_dim, np.float32), {}

    rng = np.random.default_rng(0)
    if algo == "PPO":
        arch = {"net_arch": {"pi": [PPO_HIDDEN] * 2, "vf": [PPO_HIDDEN] * 2}}
        kwargs: dict[str, Any] = {
            "n_steps": batch,
            "batch_size": batch,
            "n_epochs": 1,
            "policy_kwargs": arch,
        }
        model = sb3.PPO("MlpPolicy", Sizes(), device=device, seed=0, **kwargs)
        _random_rollout(model, rng)
        model._setup_learn(total_timesteps=1)
        return lambda: model.train()
    cls = {"SAC": sb3.SAC, "TD3": sb3.TD3, "DQN": sb3.DQN}[algo]
    model = cls(
        "MlpPolicy",
        Sizes(),
        batch_size=batch,
        buffer_size=4 * batch,
        learning_starts=0,
        policy_kwargs={"net_arch": list(HIDDEN)},
        device=device,
        seed=0,
    )
    for _ in range(4 * batch):
        action = rng.integers(0, DQN_ACTIONS, (1, 1)) if discrete else rng.uniform(-1, 1, (1, 6))
        model.replay_buffer.add(
            rng.standard_normal((1, obs_dim)),
            rng.standard_normal((1, obs_dim)),
            action,
            rng.standard_normal(1),
            np.zeros(1),
            [{}],
        )
    model._setup_learn(total_timesteps=1)  # the logger train() writes to
    return lambda: model.train(gradient_steps=1, batch_size=batch)


def _random_rollout(model: Any, rng: np.random.Generator) -> None:
    """Fill SB3 PPO's rollout buffer with random steps and compute its advantages."""
    buffer = model.rollout_buffer
    for _ in range(buffer.buffer_size):
        buffer.add(
            rng.standard_normal((1, OBS_DIM)).astype(np.float32),
            rng.uniform(-1, 1, (1, ACT_DIM)).astype(np.float32),
            rng.standard_normal(1),
            np.zeros(1),
            torch.as_tensor(rng.standard_normal(1), dtype=torch.float32),
            torch.as_tensor(-rng.uniform(1, 5, 1), dtype=torch.float32),
        )
    buffer.compute_returns_and_advantage(torch.zeros(1), np.zeros(1))


def measure(algo: str, side: str, device: str, batch: int, updates: int) -> float:
    """Updates per second of one case.

    Raises:
        Exception: whatever building or stepping the case raised (a missing ``compile``
            option, SB3 not installed): the caller reports it in the case's row.
    """
    if side == "sb3":
        step = _sb3(algo, device, batch)
    else:
        step = _ours(algo, device, batch, {"compile": True} if side == "captured" else {})
    return _timed(step, updates, device)


def case_row(algo: str, device: str, batch: int, sides: list[str], updates: int) -> str:
    """One table row: updates/s of every side, and the ratios to eager."""
    rates: dict[str, float | str] = {}
    for side in sides:
        try:
            rates[side] = measure(algo, side, device, batch, updates)
        except Exception as exc:  # the row says what failed; the other sides run
            rates[side] = f"n/a ({type(exc).__name__}: {' '.join(str(exc).split())[:90]})"
    cells = [f"{r:,.0f}" if isinstance(r, float) else r for r in rates.values()]
    eager = rates.get("eager")
    ratios = [
        f"{r / eager:.2f}×" if isinstance(r, float) and isinstance(eager, float) else ""
        for side, r in rates.items()
        if side != "eager"
    ]
    return f"| {algo} | {device} | {batch} | " + " | ".join(cells + ratios) + " |"


def table_head(sides: list[str]) -> list[str]:
    others = [f"{side} / eager" for side in sides if side != "eager"]
    names = [f"{side}, updates/s" for side in sides] + others
    return [
        "| algo | device | batch | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=["SAC"], choices=ALGOS)
    parser.add_argument("--sides", nargs="+", default=["eager"], choices=SIDES)
    parser.add_argument("--sb3", action="store_true", help="also the sb3 side")
    parser.add_argument("--compile", action="store_true", help="also the captured side")
    parser.add_argument("--devices", nargs="+", default=devices(), choices=["cpu", "cuda"])
    parser.add_argument("--batches", nargs="+", type=int, default=list(BATCHES))
    parser.add_argument("--updates", type=int, default=200, help="timed updates per case")
    parser.add_argument("--output", help="write the table (markdown) here too")
    args = parser.parse_args()
    added = [side for side, asked in (("captured", args.compile), ("sb3", args.sb3)) if asked]
    sides = [*args.sides, *(side for side in added if side not in args.sides)]
    rows = table_head(sides)
    for algo in args.algos:
        for device in args.devices:
            for batch in args.batches:
                rows.append(case_row(algo, device, batch, sides, args.updates))
                print(rows[-1], flush=True)
    text = (
        header("Learner updates per second on torch")
        + f"{args.updates} timed updates per case after {WARMUP}; torch {torch.__version__}, "
        + f"{torch.get_num_threads()} CPU threads.\n\n"
        + "\n".join(rows)
        + "\n"
    )
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
