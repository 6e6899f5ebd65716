"""Where a training run's time goes: cProfile of the examples the speed benchmark runs.

Runs ``examples/PPO/train.py``, ``examples/DQN/train.py`` and (``--algos SAC TD3``, Pendulum-v1
by default, ``--env`` another) ``examples/SAC/train.py`` with the configs of
``benchmarks/sb3_speed.py`` under :mod:`cProfile` and sums the inclusive time of the functions
that make up each part of a training round (env stepping, acting, host↔tensor conversion,
forward, backward, optimizer, checks, replay memory, logging, evaluation)::

    python -m benchmarks.speed_profile [--steps 20000] [--label after]
    python -m benchmarks.speed_profile --algos SAC TD3 --steps 3000  # 2000 updates each

Appends a section to ``benchmarks/results/speed-profile.md``. Buckets are inclusive times of
the listed functions, so a bucket can contain another (acting contains its conversions and its
forward); the note under each table says which. cProfile adds its own per-call cost, which
weighs most on many tiny Python calls: read the shares, not the seconds.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._report import commit, load_example, machine, markdown_table

HERE = Path(__file__).resolve().parent

# (bucket, (file suffix, function name) pairs whose inclusive times it sums, note).
# Only functions at the top of their bucket are listed, so a bucket counts no call twice.
Bucket = tuple[str, list[tuple[str, str]], str]

SHARED_BUCKETS: list[Bucket] = [
    ("host reads (all)", [("", "numpy"), ("", "tolist")], "Tensor.numpy / tolist anywhere"),
    ("to_tensor (all)", [("paddle/tensor/creation.py", "to_tensor")], "numpy → tensor anywhere"),
    (
        "logging",
        [
            ("parl/utils/summary.py", "add_scalars"),
            ("parl/utils/rollout.py", "log_episodes"),
            ("tqdm/std.py", "update"),
        ],
        "",
    ),
    ("evaluation", [("parl/utils/evaluation.py", "evaluate")], "greedy evaluations"),
]

PPO_BUCKETS: list[Bucket] = [
    ("env stepping", [("gymnasium/vector/sync_vector_env.py", "step")], "SyncVectorEnv.step"),
    (
        "acting",
        [("parl_algos_pg/agent.py", "sample")],
        "PPOAgent.sample: conversion + forward + sampling",
    ),
    (
        "bootstrap values (GAE)",
        [("parl_algos_pg/agent.py", "value"), ("parl/utils/rl_utils.py", "compute_gae")],
        "value calls of truncations and the last obs, GAE",
    ),
    ("learn (total)", [("parl_algos_pg/ppo.py", "learn_epochs")], "everything below"),
    ("· checks", [("parl_algos_pg/ppo.py", "_batch")], "conversion + the action check"),
    ("· minibatch gather", [("parl_algos_pg/ppo.py", "_rows")], "take_rows per minibatch"),
    (
        "· forward + loss",
        [("parl_algos_pg/ppo.py", "_value"), ("parl_algos_pg/on_policy.py", "_distribution")],
        "",
    ),
    ("· backward", [("", "backward")], "Tensor.backward"),
    (
        "· optimizer",
        [("parl/core/paddle/optim.py", "clip_grad_norm_"), ("paddle/optimizer/adam.py", "step")],
        "grad clipping + Adam",
    ),
    *SHARED_BUCKETS,
]

DQN_BUCKETS: list[Bucket] = [
    ("env stepping", [("gymnasium/vector/sync_vector_env.py", "step")], "SyncVectorEnv.step"),
    ("acting", [("parl_algos_dqn/agent.py", "sample")], "DQNAgent.sample: conversion + forward"),
    ("replay append", [("parl/utils/replay_memory.py", "append_batch")], ""),
    (
        "replay sample",
        [
            ("parl/utils/replay_memory.py", "sample_batch"),
            ("parl/utils/replay_memory.py", "sample_tensor_batches"),
        ],
        "index draw + numpy gather (+ one to_tensor per field when sampling tensors)",
    ),
    ("learn (total)", [("parl_algos_dqn/agent.py", "learn")], "everything below"),
    (
        "· checks + conversion",
        [("parl/core/transitions.py", "as_transitions")],
        "as_batch_* per step",
    ),
    ("· target (no grad)", [("", "_next_value")], "bootstrap value"),
    ("· forward + loss", [("parl_algos_dqn/dqn.py", "_q_values")], "all forwards incl. target"),
    ("· backward", [("", "backward")], "Tensor.backward"),
    (
        "· optimizer",
        [("parl/core/paddle/optim.py", "clip_grad_norm_"), ("paddle/optimizer/adam.py", "step")],
        "grad clipping + Adam",
    ),
    ("· target sync", [("parl_algos_dqn/dqn.py", "sync_target")], ""),
    *SHARED_BUCKETS,
]


# SAC and TD3 share examples/SAC/train.py and the DDPG skeleton (parl_algos_ac/ddpg.py).
AC_BUCKETS: list[Bucket] = [
    ("env stepping", [("gymnasium/vector/sync_vector_env.py", "step")], "SyncVectorEnv.step"),
    (
        "acting",
        [("parl_algos_ac/agent.py", "sample")],
        "ContinuousAgent.sample: conversion + forward",
    ),
    ("replay append", [("parl/utils/replay_memory.py", "append_batch")], ""),
    (
        "replay sample",
        [("parl/utils/replay_memory.py", "sample_batch")],
        "index draw + numpy gather",
    ),
    ("learn (total)", [("parl_algos_ac/agent.py", "learn")], "everything below"),
    (
        "· checks + conversion",
        [("parl_algos_ac/ddpg.py", "_transitions")],
        "numpy → tensors, shapes",
    ),
    ("· policy forward", [("parl_algos_ac/models.py", "policy")], "incl. acting's and evals'"),
    ("· tanh-Gaussian sample", [("parl/core/distributions.py", "rsample_with_log_prob")], "SAC"),
    (
        "· critic forward",
        [("parl_algos_ac/ddpg.py", "_q")],
        "both critics batched; online + target",
    ),
    ("· backward", [("", "backward")], "Tensor.backward"),
    (
        "· optimizer",
        [("paddle/optimizer/optimizer.py", "clear_grad"), ("paddle/optimizer/adam.py", "step")],
        "clear_grad + Adam (actor, critics, SAC's α)",
    ),
    ("· target update", [("parl/core/paddle/target.py", "update_target")], "Polyak, in place"),
    *SHARED_BUCKETS,
]


# Stable-Baselines3's SAC and TD3 (``--sb3``, run with the SB3 venv's interpreter), for the
# same parts of an update in torch.
SB3_BUCKETS: list[Bucket] = [
    ("env stepping", [("vec_env/dummy_vec_env.py", "step_wait")], "DummyVecEnv.step_wait"),
    ("acting", [("common/off_policy_algorithm.py", "_sample_action")], "incl. its forward"),
    ("replay append", [("common/buffers.py", "add")], ""),
    ("replay sample", [("common/buffers.py", "sample")], "index draw + gather + as_tensor"),
    ("learn (total)", [("sac/sac.py", "train"), ("td3/td3.py", "train")], "everything below"),
    (
        "· policy forward",
        [("sac/policies.py", "action_log_prob"), ("td3/policies.py", "forward")],
        "SAC: incl. its sampling; TD3: incl. acting's",
    ),
    (
        "· critic forward",
        [("common/policies.py", "forward"), ("common/policies.py", "q1_forward")],
        "two critics, one module each; online + target",
    ),
    ("· backward", [("torch/_tensor.py", "backward")], "Tensor.backward"),
    (
        "· optimizer",
        [("torch/optim/optimizer.py", "zero_grad"), ("torch/optim/adam.py", "step")],
        "zero_grad + Adam",
    ),
    ("· target update", [("common/utils.py", "polyak_update")], "torch._foreach_mul_/add_"),
    ("host reads (all)", [("", "numpy"), ("", "item")], "Tensor.numpy / item anywhere"),
]


def run_sb3(algo: str, env_id: str) -> Callable[[int, str], None]:
    """SB3's SAC or TD3 as ``benchmarks/sb3_speed.py`` times it (imports outside the profile)."""
    import stable_baselines3.common.env_util
    import stable_baselines3.common.noise

    from benchmarks.sb3_speed import _sb3

    del stable_baselines3

    def run(steps: int, logdir: str) -> None:
        _sb3(algo, steps, env_id)

    return run


def run_ac(algo: str, env_id: str) -> Callable[[int, str], None]:
    """SAC or TD3 as ``benchmarks/sb3_speed.py`` times it (the import stays out of the profile)."""
    from benchmarks.sb3_speed import ac_train_kwargs

    example = load_example("SAC")

    def run(steps: int, logdir: str) -> None:
        example.train(example.Args(**ac_train_kwargs(algo, env_id, steps, logdir)))

    return run


def run_example(name: str) -> Callable[[int, str], None]:
    """PPO or DQN on CartPole-v1 (the import stays out of the profile)."""
    example = load_example(name)

    def run(steps: int, logdir: str) -> None:
        args = example.Args(total_steps=steps, eval_every=10 * steps, logdir=logdir, quiet=True)
        example.train(args)

    return run


def profile(run: Callable[[int, str], None], steps: int, cpu: bool = False) -> pstats.Stats:
    """Profile ``run``; ``cpu`` times with the process's CPU clock (steadier on a busy machine)."""
    profiler = cProfile.Profile(time.process_time) if cpu else cProfile.Profile()
    with tempfile.TemporaryDirectory() as logdir:
        profiler.enable()
        run(steps, logdir)
        profiler.disable()
    return pstats.Stats(profiler)


def bucket_rows(stats: pstats.Stats, buckets: list[Bucket]) -> list[list[object]]:
    table = stats.stats  # type: ignore[attr-defined]
    total = max(ct for (_, _, _, ct, _) in table.values())
    rows: list[list[object]] = []
    for name, functions, note in buckets:
        seconds, calls = 0.0, 0
        for (filename, _, funcname), (_, ncalls, _, cumtime, _) in table.items():
            for suffix, wanted in functions:
                matches_name = funcname == wanted or funcname.endswith(f"'{wanted}'")
                matches_name = matches_name or funcname.startswith(f"<method '{wanted}'")
                if matches_name and filename.endswith(suffix):
                    seconds += cumtime
                    calls += ncalls
        rows.append([name, f"{seconds:.2f}", f"{100 * seconds / total:.0f} %", calls, note])
    rows.append(["**whole run**", f"{total:.2f}", "100 %", "", "train() under cProfile"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--label", default="", help="section title, e.g. 'before' or 'after'")
    parser.add_argument(
        "--algos", nargs="+", default=["PPO", "DQN"], choices=["PPO", "DQN", "SAC", "TD3"]
    )
    parser.add_argument("--env", default="Pendulum-v1", help="SAC's and TD3's env")
    parser.add_argument("--sb3", action="store_true", help="profile SB3's SAC/TD3 instead")
    args = parser.parse_args()
    sections = []
    for algo in args.algos:
        env_id = "CartPole-v1"
        if algo == "PPO":
            run, buckets = run_example("PPO"), PPO_BUCKETS
        elif algo == "DQN":
            run, buckets = run_example("DQN"), DQN_BUCKETS
        elif args.sb3:
            run, buckets, env_id = run_sb3(algo, args.env), SB3_BUCKETS, args.env
        else:
            run, buckets, env_id = run_ac(algo, args.env), AC_BUCKETS, args.env
        # SAC and TD3 (ours and SB3's) in CPU seconds; PPO and DQN as before, in wall seconds.
        rows = bucket_rows(profile(run, args.steps, cpu=algo in ("SAC", "TD3")), buckets)
        table = markdown_table(["part", "seconds", "share", "calls", "what"], rows)
        side = "SB3 " if args.sb3 else ""
        sections.append(f"### {side}{algo} {env_id}, {args.steps} env steps\n\n{table}\n")
        print(sections[-1], flush=True)
    command = "python -m benchmarks.speed_profile " + " ".join(sys.argv[1:])
    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    text = (
        f"## {args.label or 'profile'} (commit `{commit()}`)\n\n- command: "
        f"`OMP_NUM_THREADS={threads} {command}`\n- machine: {machine()}\n\n" + "\n".join(sections)
    )
    out = HERE / "results" / "speed-profile.md"
    if not out.exists():
        out.write_text(
            "# Where a training run's time goes (PPO and DQN, CartPole-v1)\n\n"
            + (__doc__ or "").split("\n\n", 1)[1]
            + "\n"
        )
    with out.open("a") as handle:
        handle.write("\n" + text)


if __name__ == "__main__":
    main()
