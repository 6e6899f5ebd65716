"""Our TD3's updates against Stable-Baselines3's, from the same weights on the same batch.

``python -m benchmarks.ac.td3_update_vs_sb3 --sb3-python /tmp/sb3/bin/python [--steps 4]``

Builds our 256-256 :class:`~parl_algos_ac.models.DeterministicActorCritic` for HalfCheetah-v5's
sizes (17 → 6) and a batch of 256 random transitions (10 % terminal), copies the weights into
SB3's TD3 (actor, two critics and their targets), and lets each side take ``--steps`` updates on
that batch with the TD3 benchmark's settings (lr 1e-3, gamma 0.98, tau 0.005, policy delay 2).
The target smoothing noise is 0 on both sides (random draws cannot match across frameworks;
``parl-algos-ac/tests/test_loss_math.py`` checks the smoothing against numpy). Writes
``benchmarks/results/td3-update-vs-sb3.md``: per network, the largest weight difference
between the two sides beside the largest distance either moved from the start.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, TypedDict

import numpy as np


class Settings(TypedDict):
    lr: float
    gamma: float
    tau: float
    policy_delay: int
    batch: int


SETTINGS: Settings = {"lr": 1e-3, "gamma": 0.98, "tau": 0.005, "policy_delay": 2, "batch": 256}
OBS_DIM, ACT_DIM = 17, 6


def _sb3_side(data_path: str, out_path: str, steps: int) -> None:
    """Load the weights into SB3's TD3, take ``steps`` updates on the batch, save the weights."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import TD3
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.type_aliases import ReplayBufferSamples

    torch.set_num_threads(1)
    data = np.load(data_path)
    model = TD3(
        "MlpPolicy",
        gym.make("HalfCheetah-v5"),
        policy_kwargs={"net_arch": [256, 256]},
        learning_rate=SETTINGS["lr"],
        gamma=SETTINGS["gamma"],
        tau=SETTINGS["tau"],
        policy_delay=SETTINGS["policy_delay"],
        target_policy_noise=0.0,
        device="cpu",
    )

    def linears(net: Any) -> list[Any]:
        return [layer for layer in net if isinstance(layer, torch.nn.Linear)]

    networks = {"actor": [model.actor.mu, model.actor_target.mu]}
    for k in range(2):
        networks[f"q{k}"] = [model.critic.q_networks[k], model.critic_target.q_networks[k]]
    with torch.no_grad():
        for name, nets in networks.items():
            for net in nets:
                for i, layer in enumerate(linears(net)):
                    layer.weight.copy_(torch.tensor(data[f"{name}.W{i}"]).T)
                    layer.bias.copy_(torch.tensor(data[f"{name}.b{i}"]))
    batch = ReplayBufferSamples(
        *(torch.tensor(data[key]) for key in ("obs", "act", "next_obs")),
        torch.tensor(data["term"]).reshape(-1, 1),
        torch.tensor(data["rew"]).reshape(-1, 1),
    )
    model.replay_buffer.sample = lambda *args, **kwargs: batch  # type: ignore[union-attr]
    model.set_logger(configure(None, [""]))
    model.train(gradient_steps=steps, batch_size=SETTINGS["batch"])
    out = {}
    for name, (online, target) in networks.items():
        for prefix, net in (("model", online), ("target", target)):
            for i, layer in enumerate(linears(net)):
                out[f"{prefix}.{name}.W{i}"] = layer.weight.detach().numpy().T
                out[f"{prefix}.{name}.b{i}"] = layer.bias.detach().numpy()
    np.savez(out_path, **out)


def _weights(model: Any) -> dict[str, np.ndarray]:
    """Our model's weights by network (``actor``, ``q0``, ``q1``) in SB3's layer order."""
    import paddle

    out = {}
    layers = [layer for layer in model.actor if isinstance(layer, paddle.nn.Linear)]
    for i, layer in enumerate(layers):
        out[f"actor.W{i}"], out[f"actor.b{i}"] = layer.weight.numpy(), layer.bias.numpy()
    for i, (weight, bias) in enumerate(zip(model.critic.weights, model.critic.biases, strict=True)):
        for k in range(2):
            out[f"q{k}.W{i}"], out[f"q{k}.b{i}"] = weight.numpy()[k], bias.numpy()[k, 0]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sb3-python", help="interpreter of a venv with stable-baselines3")
    parser.add_argument("--steps", type=int, default=4, help="updates on each side")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side == "sb3":
        _sb3_side(args.data, args.out, args.steps)
        return 0
    if not args.sb3_python:
        parser.error("--sb3-python is required: the interpreter of a venv with stable-baselines3")
    import parl

    from benchmarks._report import ROOT, header, markdown_table
    from parl_algos_ac import TD3, DeterministicActorCritic

    parl.set_seed(0)
    model = DeterministicActorCritic(OBS_DIM, ACT_DIM, (256, 256), num_critics=2)
    rng, size = np.random.default_rng(0), SETTINGS["batch"]
    batch = {
        "obs": rng.normal(size=(size, OBS_DIM)).astype(np.float32),
        "act": rng.uniform(-1, 1, (size, ACT_DIM)).astype(np.float32),
        "rew": rng.normal(size=size).astype(np.float32),
        "next_obs": rng.normal(size=(size, OBS_DIM)).astype(np.float32),
        "term": (rng.random(size) < 0.1).astype(np.float32),
    }
    start = _weights(model)
    with tempfile.TemporaryDirectory(prefix="td3-vs-sb3-") as tmp:
        data_path, out_path = Path(tmp) / "start.npz", Path(tmp) / "sb3.npz"
        # mypy matches `**` of a dict[str, ndarray] against savez's `allow_pickle: bool` too
        np.savez(data_path, **start, **batch)  # type: ignore[arg-type]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(ROOT)}
        command = [args.sb3_python, "-m", "benchmarks.ac.td3_update_vs_sb3", "--side", "sb3"]
        command += ["--data", str(data_path), "--out", str(out_path), "--steps", str(args.steps)]
        subprocess.run(command, cwd=ROOT, env=env, check=True)
        sb3 = dict(np.load(out_path))
    td3 = TD3(
        model,
        gamma=SETTINGS["gamma"],
        tau=SETTINGS["tau"],
        actor_lr=SETTINGS["lr"],
        critic_lr=SETTINGS["lr"],
        policy_noise=0.0,
        policy_freq=SETTINGS["policy_delay"],
    )
    for _ in range(args.steps):
        td3.learn(batch["obs"], batch["act"], batch["rew"], batch["next_obs"], batch["term"])
    ours = {f"model.{k}": v for k, v in _weights(td3.model).items()}
    ours |= {f"target.{k}": v for k, v in _weights(td3.target_model).items()}
    rows = []
    for prefix in ("model", "target"):
        for name in ("actor", "q0", "q1"):
            keys = [k for k in ours if k.startswith(f"{prefix}.{name}.")]
            diff = max(float(np.abs(ours[k] - sb3[k]).max()) for k in keys)
            moved = max(
                float(np.abs(side[k] - start[k.split(".", 1)[1]]).max())
                for side in (ours, sb3)
                for k in keys
            )
            rows.append([f"{prefix} {name}", f"{diff:.2e}", f"{moved:.2e}", f"{diff / moved:.1e}"])
    lines = [header("TD3 updates: ours against Stable-Baselines3's").rstrip("\n"), ""]
    lines += [
        f"- {args.steps} updates on one batch of {size}, from the same weights; settings "
        f"{SETTINGS}, smoothing noise 0",
        "",
        markdown_table(["network", "largest difference", "largest move", "ratio"], rows),
        "",
    ]
    path = ROOT / "benchmarks" / "results" / "td3-update-vs-sb3.md"
    path.write_text("\n".join(lines))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
