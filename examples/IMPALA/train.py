"""IMPALA on CartPole-v1 or Atari with remote actors on an xparl cluster.

Run ``python train.py`` (CartPole-v1, 2 actors on an embedded cluster that starts and stops
with the script) or ``python train.py --env PongNoFrameskip-v4 --num-actors 4`` (Atari through
``parl.env.wrap_deepmind``; ``pip install "parl-utils[atari]"``). ``--address HOST:PORT`` uses
a cluster started with ``xparl start``; ``--num-actors 0`` runs the same actor in the learner's
process. :class:`parl_algos_impala.harness.ActorLearner` runs the actors (each steps its own
gymnasium vector env) and the learner thread; this script builds the model and env, evaluates
the greedy policy now and then, and saves the model. ``train(...)`` is importable so that
benchmarks can call it.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import parl
from parl.utils import evaluate, logger, make_vector_env, summary

from model import make_env, make_model

from parl_algos_impala.harness import ActorLearner

HERE = Path(__file__).resolve().parent
EVAL_EPISODES = 10


@dataclass(frozen=True)
class IMPALASettings:
    """Hyperparameters of an IMPALA run.

    One learn step sees ``batches_per_learn * envs_per_actor`` trajectories of
    ``sample_batch_steps`` rows (the last row of each only bootstraps). ``entropy_coeff`` is
    negative (PARL's sign: a bonus). ``anneal_lr`` decays the learning rate linearly to 1% of
    ``lr`` over ``total_steps``. Evaluation runs every ``eval_every`` env steps (0: never; an
    Atari episode is a whole game), and ``target`` is the evaluation return whose first
    crossing is reported.
    """

    total_steps: int = 200_000
    num_actors: int = 2
    envs_per_actor: int = 8
    sample_batch_steps: int = 20
    batches_per_learn: int = 1
    queue_size: int = 4
    lr: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 0.99
    vf_loss_coeff: float = 0.5
    entropy_coeff: float = -0.01
    clip_rho_threshold: float = 1.0
    clip_pg_rho_threshold: float = 1.0
    max_grad_norm: float = 40.0
    eval_every: int = 10_000
    target: float | None = None


DEFAULTS: dict[str, IMPALASettings] = {
    "CartPole-v1": IMPALASettings(target=450.0),
    # PARL's Atari settings, scaled to a few CPUs: 42x42 frames, 50-step trajectories.
    "PongNoFrameskip-v4": IMPALASettings(
        total_steps=10_000_000,
        envs_per_actor=5,
        sample_batch_steps=50,
        batches_per_learn=4,
        lr=1e-3,
        eval_every=0,
    ),
}


def train(
    env_id: str = "CartPole-v1",
    seed: int = 0,
    settings: IMPALASettings | None = None,
    logdir: str | os.PathLike[str] | None = None,
    address: str | None = None,
    quiet: bool = False,
    **overrides: Any,
) -> dict[str, Any]:
    """Train IMPALA on ``env_id`` and return the figures of the run.

    Args:
        env_id: a gymnasium id with a Discrete action space (Atari ids use ``wrap_deepmind``).
        seed: seeds paddle, numpy and the environments.
        settings: hyperparameters; ``DEFAULTS[env_id]`` (or ``IMPALASettings()``) if None.
        logdir: metrics directory; ``train_log/impala-<env>-seed<seed>`` if None.
        address: an xparl master; None: an embedded cluster (when there are remote actors).
        quiet: no log lines.
        **overrides: replace single settings, e.g. ``total_steps=10_000``.

    Returns:
        ``env_steps``, ``wall_s``, ``sps`` (steady state), ``utilisation`` (of the learner),
        ``replaced_actors``, ``final_eval_return``, ``target``, ``first_target_step`` and
        ``evals`` (a list of ``(step, return)``).
    """
    settings = replace(settings or DEFAULTS.get(env_id, IMPALASettings()), **overrides)
    parl.set_seed(seed)
    logdir = Path(logdir or f"train_log/impala-{env_id}-seed{seed}")
    summary.set_logdir(logdir)
    build_model = partial(make_model, env_id)
    algorithm = parl.algorithms.get("IMPALA")(
        build_model(),
        settings.sample_batch_steps,
        settings.gamma,
        settings.vf_loss_coeff,
        settings.clip_rho_threshold,
        settings.clip_pg_rho_threshold,
        initial_lr=settings.lr,
        max_grad_norm=settings.max_grad_norm,
    )

    def learning_rate(env_steps: int) -> float:
        if not settings.anneal_lr:
            return settings.lr
        return settings.lr * max(1.0 - env_steps / settings.total_steps, 0.01)

    system = ActorLearner(
        algorithm,
        partial(make_env, env_id),
        build_model,
        num_actors=settings.num_actors,
        envs_per_actor=settings.envs_per_actor,
        batches_per_learn=settings.batches_per_learn,
        queue_size=settings.queue_size,
        learning_rate=learning_rate,
        entropy_coeff=settings.entropy_coeff,
        address=address,
        distributed_files=[str(HERE / "model.py")],
        seed=seed,
    )
    eval_envs = make_vector_env(
        partial(make_env, env_id), EVAL_EPISODES if settings.eval_every else 1
    )

    def greedy(obs: np.ndarray) -> np.ndarray:
        return algorithm.predict(obs).numpy()

    evals: list[tuple[int, float]] = []
    next_eval = [settings.eval_every or float("inf")]

    def evaluate_now(learn_steps: int, env_steps: int) -> None:
        if env_steps < next_eval[0]:
            return
        next_eval[0] += settings.eval_every
        result = evaluate(eval_envs, greedy, EVAL_EPISODES, seed=10_000)
        summary.add_scalars(result.metrics(), env_steps)
        evals.append((env_steps, result.mean_return))
        if not quiet:
            logger.info(f"env step {env_steps}: greedy return {result.mean_return:.1f}")

    run = system.train(settings.total_steps, on_learn=evaluate_now)
    final = float("nan")
    if settings.eval_every:
        final = evaluate(eval_envs, greedy, EVAL_EPISODES, seed=10_000).mean_return
    eval_envs.close()
    parl.Agent(algorithm).save(logdir / "model.ckpt")
    summary.flush()
    reached = [
        step for step, ret in evals if settings.target is not None and ret >= settings.target
    ]
    if not quiet:
        logger.info(
            f"{run.env_steps} env steps in {run.wall_s:.1f} s ({run.sps:.0f}/s steady, learner "
            f"busy {run.utilisation:.0%}, {run.replaced_actors} actors replaced); final "
            f"evaluation: mean return {final:.1f}"
        )
    return {
        "env_steps": run.env_steps,
        "wall_s": run.wall_s,
        "sps": run.sps,
        "utilisation": run.utilisation,
        "replaced_actors": run.replaced_actors,
        "final_eval_return": final,
        "target": settings.target,
        "first_target_step": reached[0] if reached else None,
        "evals": evals,
        "settings": asdict(settings),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--total-steps", type=int)
    parser.add_argument("--num-actors", type=int, help="remote actors; 0: in this process")
    parser.add_argument("--envs-per-actor", type=int)
    parser.add_argument(
        "--address",
        help="where actors run: an xparl HOST:PORT, 'ray' (a local Ray) or 'ray://HOST:PORT' "
        "(default: an embedded xparl cluster)",
    )
    parser.add_argument("--logdir")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    overrides = {
        name: value
        for name, value in {
            "total_steps": args.total_steps,
            "num_actors": args.num_actors,
            "envs_per_actor": args.envs_per_actor,
        }.items()
        if value is not None
    }
    train(args.env, args.seed, None, args.logdir, args.address, args.quiet, **overrides)


if __name__ == "__main__":
    main()
