"""IMPALA on CartPole-v1 or Atari with remote actors on an xparl cluster.

``python examples/IMPALA/train.py`` trains CartPole-v1 with 2 actors on an embedded cluster that
starts and stops with the script; ``--config benchmarks/configs/IMPALA-PongNoFrameskip-v4.yaml``
plays Pong (``parl.env.wrap_deepmind``; ``pip install "parl-utils[atari]"``). ``--address
HOST:PORT`` uses a cluster started with ``xparl start``; ``--num-actors 0`` runs the same actor in
the learner's process. :class:`parl_algos_impala.harness.ActorLearner` runs the actors (each
steps its own gymnasium vector env) and the learner thread; the tracker evaluates the greedy
policy after learn steps and keeps the best model. ``--backend torch`` trains the same classes
on torch (the actors act on the CPU), ``--device cuda`` puts the learner on a GPU. ``--help``
lists every flag.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Literal

import parl
from parl.core.neutral import Agent
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

from parl_algos_impala.harness import ActorLearner
from parl_algos_impala.models import make_env, make_model


@dataclasses.dataclass(frozen=True)
class Args:
    """IMPALA (V-trace) with remote actors on an env with Discrete actions.

    One learn step sees batches_per_learn * envs_per_actor trajectories of sample_batch_steps
    rows (the last row of each only bootstraps).
    """

    env_id: str = "CartPole-v1"
    """Gymnasium id with Discrete actions (Atari ids get wrap_deepmind)."""
    seed: int = 0
    """Seeds the framework, numpy and the environments."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend() (PARL_BACKEND, else the installed)."""
    device: str = "cpu"
    """Where the torch learner trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    compile: bool = False
    """Capture each update with torch.compile (CUDA graphs on a GPU); paddle runs eagerly."""
    total_steps: int = 200_000
    """Environment steps over all actors."""
    address: str | None = None
    """Where actors run: an xparl HOST:PORT, "ray" or "ray://HOST:PORT"; None: an embedded
    xparl cluster."""
    num_actors: int = 2
    """Remote actors; 0 runs one in the learner's process."""
    envs_per_actor: int = 8
    """Sub-environments per actor."""
    sample_batch_steps: int = 20
    """Rows per trajectory."""
    batches_per_learn: int = 1
    """Actor batches per learn step."""
    queue_size: int = 4
    """Batches waiting for the learner at most."""
    lr: float = 1e-3
    """Learning rate."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 1% of lr over total_steps."""
    gamma: float = 0.99
    """Discount factor."""
    vf_loss_coeff: float = 0.5
    """Weight of the value loss."""
    entropy_coeff: float = -0.01
    """PARL's sign: negative is a bonus."""
    clip_rho_threshold: float = 1.0
    """V-trace's rho clip."""
    clip_pg_rho_threshold: float = 1.0
    """V-trace's policy-gradient rho clip."""
    max_grad_norm: float = 40.0
    """Global gradient-norm clip."""
    eval_every: int = 10_000
    """Environment steps between greedy evaluations; 0: never (an Atari episode is a game)."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = 450.0
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/IMPALA_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every learn step, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/IMPALA_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    build_model = partial(make_model, args.env_id, backend=backend)
    algorithm = parl.algorithms.get("IMPALA", backend=backend)(
        build_model(),
        args.sample_batch_steps,
        args.gamma,
        args.vf_loss_coeff,
        args.clip_rho_threshold,
        args.clip_pg_rho_threshold,
        initial_lr=args.lr,
        max_grad_norm=args.max_grad_norm,
        device=args.device,
        compile=args.compile,
    )

    def learning_rate(env_steps: int) -> float:
        if not args.anneal_lr:
            return args.lr
        return args.lr * max(1.0 - env_steps / args.total_steps, 0.01)

    system = ActorLearner(
        algorithm,
        partial(make_env, args.env_id),
        build_model,
        num_actors=args.num_actors,
        envs_per_actor=args.envs_per_actor,
        batches_per_learn=args.batches_per_learn,
        queue_size=args.queue_size,
        learning_rate=learning_rate,
        entropy_coeff=args.entropy_coeff,
        address=args.address,
        seed=args.seed,
    )
    eval_envs = make_vector_env(
        partial(make_env, args.env_id), args.eval_episodes if args.eval_every else 1
    )
    agent = Agent(algorithm)
    tracker = EvalTracker(
        agent,
        eval_envs,
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        seed=args.seed,
        run_dir=run_dir,
        env_id=args.env_id,
        target=args.target,
        callbacks=callbacks,
        policy=lambda obs: agent.to_numpy(algorithm.predict(obs)),
    )

    bar = progress_bar(args.total_steps, f"IMPALA {args.env_id}", unit="step", disable=args.quiet)
    shown = 0

    def after_learn(learn_steps: int, env_steps: int) -> None:
        # The harness logs its own losses and charts; the tracker evaluates and may stop.
        nonlocal shown
        bar.update(env_steps - shown)
        shown = env_steps
        if tracker.update(env_steps):
            system.stop()

    run = system.train(args.total_steps, on_learn=after_learn)
    bar.close()
    result = tracker.finish(
        run.env_steps,
        steady_sps=run.sps,
        utilisation=run.utilisation,
        replaced_actors=run.replaced_actors,
    )
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
