"""Train a Decision Transformer from a fixed dataset (offline RL), Pendulum-v1 by default.

The dataset comes as for CQL, IQL and BC, through examples/CQL/train.py's loader: ``--dataset``
takes a D4RL-layout HDF5 file or a Minari dataset directory already on disk (nothing is
downloaded), ``--build medium`` / ``medium-replay`` / ``expert`` / ``random`` has the project's
SAC record one, and ``--dataset-cache DIR`` keeps built datasets under the same keys as that
example's, so DT learns from the very datasets CQL, IQL and BC learnt from.

DT trains on K-step segments of the dataset's episodes with their returns-to-go (states
normalised by the dataset's mean and spread), and plays asked for ``--target-return``: the
best episode return in the dataset when not given. Steps are gradient steps; evaluations play
the policy in the real environment. Needs ``pip install "parl-algos-ac[offline]"``.
``--backend torch`` trains (and builds) on torch with the same settings, ``--device cuda`` on a
GPU.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Literal

import parl
from parl.utils import (
    Callback,
    EvalTracker,
    RunResult,
    make_vector_env,
    parse_args,
    progress_bar,
    save_config,
    summary,
)
from parl.utils.offline import episode_returns

import gymnasium as gym

from parl_algos_ac import DecisionTransformerModel, DTAgent, ReturnConditioning, TrajectorySegments

OFFLINE_EXAMPLE = Path(__file__).resolve().parent.parent / "CQL" / "train.py"


@dataclasses.dataclass(frozen=True)
class Args:
    """A Decision Transformer from a dataset on disk or one built here."""

    env_id: str = "Pendulum-v1"
    """Gymnasium id the dataset comes from, and where the policy is evaluated."""
    dataset: str | None = None
    """A D4RL-layout .hdf5 file or a Minari dataset directory; None needs --build."""
    build: Literal["random", "medium", "medium-replay", "expert"] | None = None
    """Build this dataset with examples/CQL/train.py's builder instead of loading one."""
    behaviour_steps: int = 5_000
    """SAC's training steps for the medium and medium-replay datasets."""
    expert_steps: int = 20_000
    """SAC's training steps for the expert dataset."""
    dataset_size: int = 10_000
    """Transitions recorded for the random, medium and expert datasets."""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Hidden widths of the SAC that builds the dataset (part of the dataset's cache key)."""
    gamma: float = 0.99
    """Discount of the SAC that builds the dataset (DT itself does not discount)."""
    dataset_cache: str | None = None
    """A folder keeping built datasets by their build settings (shared with CQL, IQL, BC)."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend()."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    seed: int = 0
    """Seeds the framework, numpy, the environments, the dataset builder and sampling."""
    total_steps: int = 10_000
    """Gradient steps (learn calls); the paper: 100,000."""
    context_length: int = 20
    """K, the steps of history the transformer reads (the paper: 20)."""
    embed_dim: int = 128
    """Width of the tokens (128)."""
    num_layers: int = 3
    """Transformer blocks (3)."""
    num_heads: int = 1
    """Attention heads (1)."""
    dropout: float = 0.1
    """Dropout of embeddings, attention and residual branches (0.1)."""
    lr: float = 1e-4
    """Peak AdamW learning rate (1e-4)."""
    weight_decay: float = 1e-4
    """AdamW weight decay (1e-4)."""
    warmup_steps: int = 1_000
    """Gradient steps of linear learning-rate warm-up (the paper: 10,000 of 100,000)."""
    batch_size: int = 64
    """Segments per gradient step (64)."""
    return_scale: float = 1000.0
    """Returns-to-go enter the model divided by this (1000 for MuJoCo)."""
    target_return: float | None = None
    """The return the policy is asked for; None: the dataset's best episode return."""
    log_every: int = 500
    """Gradient steps between logged losses."""
    eval_every: int = 1_000
    """Gradient steps between evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = None
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory; runs/DT_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def offline_example() -> ModuleType:
    """examples/CQL/train.py as a module: its dataset loader, builder and cache serve DT."""
    spec = importlib.util.spec_from_file_location("examples_cql_train", OFFLINE_EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass resolves its annotations through it
    spec.loader.exec_module(module)
    return module


def max_episode_steps(env_id: str) -> int:
    """The env's time limit (what the timestep embedding must hold), 1000 if it has none."""
    return int(gym.spec(env_id).max_episode_steps or 1000)


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every step, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/DT_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    offline = offline_example()
    shared = {f.name for f in dataclasses.fields(offline.Args)} & set(vars(args))
    loader_args = offline.Args(**{name: getattr(args, name) for name in shared})
    data, source = offline.load_dataset(loader_args, run_dir)
    parl.set_seed(args.seed, backend=backend)  # the learner starts alike, built or loaded
    horizon = max_episode_steps(args.env_id)
    segments = TrajectorySegments(data, args.context_length, args.seed, horizon)
    behaviour = episode_returns(data)
    target_return = args.target_return
    if target_return is None:
        target_return = float(behaviour.max()) if len(behaviour) else 0.0

    obs_dim, act_dim = data["observations"].shape[1], data["actions"].shape[1]
    model = DecisionTransformerModel(
        obs_dim,
        act_dim,
        embed_dim=args.embed_dim,
        num_layers=args.num_layers,
        num_heads=args.num_heads,
        max_episode_steps=horizon,
        dropout=args.dropout,
        backend=backend,
    )
    dt = parl.algorithms.get("DT", backend=backend)(
        model,
        lr=args.lr,
        warmup_steps=args.warmup_steps,
        weight_decay=args.weight_decay,
        return_scale=args.return_scale,
    )
    agent = DTAgent(
        dt, args.context_length, segments.obs_mean, segments.obs_std, device=args.device
    )
    conditioned = lambda: ReturnConditioning(offline.make_env(args.env_id), target_return)  # noqa: E731
    tracker = EvalTracker(
        agent,
        make_vector_env(conditioned, args.eval_episodes),
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        seed=args.seed,
        run_dir=run_dir,
        env_id=args.env_id,
        target=args.target,
        callbacks=callbacks,
    )

    step = 0
    bar = progress_bar(
        args.total_steps, f"DT {args.env_id}", unit="gradient step", disable=args.quiet
    )
    for step in range(1, args.total_steps + 1):
        bar.update(1)
        loss = agent.learn(*segments.sample(args.batch_size))
        metrics = {"losses/action_loss": float(loss)} if step % args.log_every == 0 else {}
        if tracker.update(step, metrics):
            break
    bar.close()
    result = tracker.finish(
        step,
        algo="DT",
        **offline.dataset_facts(data, source),
        target_return=target_return,
        steps_are="gradient steps",
    )
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
