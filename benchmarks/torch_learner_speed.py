"""SAC learner updates per second on torch: CPU against a GPU, ours against Stable-Baselines3's.

The case of the torch backend's GPU path: SAC with 256-256 actor and critics on HalfCheetah's
sizes (17 observations, 6 actions), automatic α, one ``learn`` per update on a random batch that
already sits on the device (so the figure is the learner's, not the replay memory's or the
transfer's), at batch 256 and 4096. Each device runs its own cases; a GPU is measured only where
``torch.cuda.is_available()``. With ``--sb3``, SB3's SAC runs the same updates
(``SAC.train(gradient_steps=N)`` on a buffer of random transitions) in the same process. With
``--compile``, our SAC built with ``compile=True`` (the update captured by ``torch.compile``;
CUDA graphs on a GPU) runs the same updates too, after a warm-up that includes its compile.

Run ``python -m benchmarks.torch_learner_speed [--updates 200] [--sb3] [--compile]
[--batches 256 4096] [--output FILE]``; it
needs torch (``nox -s torch``'s environment, or any venv with ``parl-algos-ac[torch]``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from benchmarks._report import header

OBS_DIM, ACT_DIM = 17, 6
HIDDEN = (256, 256)
BATCHES = (256, 4096)
WARMUP = 10


def devices() -> list[str]:
    """The CPU, and the GPU where torch sees one."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(step: Callable[[], object], updates: int, device: str) -> float:
    """Updates per second of ``step``, after a warm-up."""
    for _ in range(WARMUP):
        step()
    _sync(device)
    start = time.perf_counter()
    for _ in range(updates):
        step()
    _sync(device)
    return updates / (time.perf_counter() - start)


def ours(device: str, batch: int, updates: int, compile: bool = False) -> float:
    """Updates per second of our torch SAC on ``device``, eager or captured."""
    from parl_algos_ac import SAC, GaussianActorCritic

    torch.manual_seed(0)
    model = GaussianActorCritic(OBS_DIM, ACT_DIM, HIDDEN, backend="torch")
    sac = SAC(model, alpha="auto", device=device, compile=compile)
    g = torch.Generator().manual_seed(0)
    obs, next_obs = (torch.randn(batch, OBS_DIM, generator=g).to(device) for _ in range(2))
    action = (torch.rand(batch, ACT_DIM, generator=g) * 2 - 1).to(device)
    reward = torch.randn(batch, generator=g).to(device)
    terminal = torch.zeros(batch).to(device)
    return _timed(lambda: sac.learn(obs, action, reward, next_obs, terminal), updates, device)


def sb3(device: str, batch: int, updates: int) -> float:
    """Updates per second of Stable-Baselines3's SAC with the same networks on ``device``."""
    import gymnasium as gym
    from stable_baselines3 import SAC as SB3SAC

    space = gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
    actions = gym.spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32)

    class Sizes(gym.Env):  # never stepped: SB3 needs an env to build its networks
        observation_space, action_space = space, actions

        def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
            return np.zeros(OBS_DIM, np.float32), {}

    model = SB3SAC(
        "MlpPolicy",
        Sizes(),
        batch_size=batch,
        buffer_size=4 * batch,
        policy_kwargs={"net_arch": list(HIDDEN)},
        device=device,
        seed=0,
    )
    rng = np.random.default_rng(0)
    for _ in range(4 * batch):
        model.replay_buffer.add(
            rng.standard_normal((1, OBS_DIM)),
            rng.standard_normal((1, OBS_DIM)),
            rng.uniform(-1, 1, (1, ACT_DIM)),
            rng.standard_normal(1),
            np.zeros(1),
            [{}],
        )
    model._setup_learn(total_timesteps=1)  # the logger SAC.train writes to
    return _timed(lambda: model.train(gradient_steps=1, batch_size=batch), updates, device)


def _figure(value: float | None) -> str:
    return f"{value:,.0f}" if value else ""


def _ratio(value: float | None, baseline: float | None) -> str:
    return f"{value / baseline:.2f}×" if value and baseline else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=200, help="timed updates per case")
    parser.add_argument("--sb3", action="store_true", help="also SB3's SAC, same process")
    parser.add_argument("--compile", action="store_true", help="also ours with compile=True")
    parser.add_argument("--batches", type=int, nargs="+", default=list(BATCHES))
    parser.add_argument("--output", help="write the table (markdown) here too")
    args = parser.parse_args()
    rows = [
        "| device | batch | ours, updates/s | ours captured, updates/s | captured / eager "
        "| SB3, updates/s | ours / SB3 |",
        "|---|---|---|---|---|---|---|",
    ]
    for device in devices():
        for batch in args.batches:
            mine = ours(device, batch, args.updates)
            captured = ours(device, batch, args.updates, compile=True) if args.compile else None
            theirs = sb3(device, batch, args.updates) if args.sb3 else None
            rows.append(
                f"| {device} | {batch} | {mine:,.0f} | {_figure(captured)} "
                f"| {_ratio(captured, mine)} | {_figure(theirs)} | {_ratio(mine, theirs)} |"
            )
            print(rows[-1], flush=True)
    threads = torch.get_num_threads()
    text = (
        header("SAC learner updates per second on torch")
        + f"SAC 256-256, automatic α, {args.updates} timed updates per case after {WARMUP}; "
        + f"torch {torch.__version__}, {threads} CPU threads.\n\n"
        + "\n".join(rows)
        + "\n"
    )
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
