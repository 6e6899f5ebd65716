"""SAC updates per second fed by the numpy replay memory or by DeviceReplayMemory, on torch.

The case of data on the device: SAC 256-256 with automatic α on HalfCheetah's sizes (17
observations, 6 actions), a memory of 100,000 random transitions, each update one
``sample_batch`` and one ``learn``. With ``ReplayMemory`` the batch is gathered in numpy and
copied to the learner's device by ``learn``; with ``DeviceReplayMemory`` the indices are drawn
and the rows gathered on the device. Also the sampling alone (to a batch on the device). Each
device runs its own cases; a GPU only where ``torch.cuda.is_available()``.

Run ``python -m benchmarks.replay_device_speed [--updates 300] [--output FILE]``; it needs
torch (``nox -s torch``'s environment, or any venv with ``parl-algos-ac[torch]``).
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parl.utils import DeviceReplayMemory, ReplayMemory

import numpy as np
import torch

from benchmarks._report import header

OBS_DIM, ACT_DIM, SIZE, BATCH = 17, 6, 100_000, 256
WARMUP = 10
BLOCKS = 9
SAMPLES_PER_UPDATE = 10  # sampling alone is timed over 10× as many calls


def devices() -> list[str]:
    """The CPU, and the GPU where torch sees one."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def _rate(step: Callable[[], object], updates: int, device: str) -> float:
    """Calls per second of ``step`` after a warm-up, waiting for the device at both ends of
    each block: the median of BLOCKS blocks of ``updates // BLOCKS`` calls, which a busy
    machine's pauses move less than a mean."""
    for _ in range(WARMUP):
        step()
    calls, rates = max(1, updates // BLOCKS), []
    for _ in range(BLOCKS):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            step()
        if device == "cuda":
            torch.cuda.synchronize()
        rates.append(calls / (time.perf_counter() - start))
    return float(np.median(rates))


def filled(memory: ReplayMemory) -> ReplayMemory:
    """``memory`` with SIZE random transitions, appended as a vector env's steps of 1,000."""
    rng = np.random.default_rng(0)
    for _ in range(SIZE // 1_000):
        memory.append_batch(
            rng.standard_normal((1_000, OBS_DIM)),
            rng.uniform(-1, 1, (1_000, ACT_DIM)),
            rng.standard_normal(1_000),
            rng.standard_normal((1_000, OBS_DIM)),
            rng.random(1_000) < 0.01,
        )
    return memory


def memories(device: str) -> dict[str, ReplayMemory]:
    host = ReplayMemory(SIZE, OBS_DIM, ACT_DIM, seed=0)
    on_device = DeviceReplayMemory(SIZE, OBS_DIM, ACT_DIM, backend="torch", device=device, seed=0)
    return {"ReplayMemory": filled(host), "DeviceReplayMemory": filled(on_device)}


def sampled_to_device(memory: ReplayMemory, device: str) -> Any:
    """One batch on ``device``: what ``learn`` would read."""
    return [torch.as_tensor(field, device=device) for field in memory.sample_batch(BATCH)]


def sac_updates(memory: ReplayMemory, device: str, updates: int) -> float:
    from parl_algos_ac import SAC, GaussianActorCritic

    torch.manual_seed(0)
    sac = SAC(GaussianActorCritic(OBS_DIM, ACT_DIM, (256, 256), backend="torch"), alpha="auto")
    sac.to(device)
    return _rate(lambda: sac.learn(*memory.sample_batch(BATCH)), updates, device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=300, help="timed updates per case")
    parser.add_argument("--output", help="write the table (markdown) here too")
    args = parser.parse_args()
    rows = [
        "| device | memory | batches sampled/s | SAC updates/s | updates/s vs ReplayMemory |",
        "|---|---|---|---|---|",
    ]
    for device in devices():
        baseline = None
        for name, memory in memories(device).items():
            sample = functools.partial(sampled_to_device, memory, device)
            sampled = _rate(sample, SAMPLES_PER_UPDATE * args.updates, device)
            updates = sac_updates(memory, device, args.updates)
            baseline = baseline or updates
            rows.append(
                f"| {device} | {name} | {sampled:,.0f} | {updates:,.0f} "
                f"| {updates / baseline:.2f}× |"
            )
            print(rows[-1], flush=True)
    text = (
        header("SAC updates per second from a host or a device replay memory (torch)")
        + f"SAC 256-256, automatic α, batch {BATCH}, {SIZE:,} stored transitions, "
        + f"the median of {BLOCKS} blocks of {args.updates // BLOCKS} updates (sampling: "
        + f"{SAMPLES_PER_UPDATE}× as many calls) per case after {WARMUP}; torch "
        + f"{torch.__version__}, "
        + f"{torch.get_num_threads()} CPU threads.\n\n"
        + "\n".join(rows)
        + "\n"
    )
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
