"""Evolution strategies (ES, CMA-ES or a GA) with remote actors on an xparl cluster.

``python examples/ES/train.py`` evolves a linear CartPole-v1 policy with OpenAI's ES and 2
actors on an embedded cluster that starts and stops with the script; ``--algo CMAES`` or
``--algo GA`` runs the other searches through the same ask/tell interface; ``--env-id
HalfCheetah-v5`` (``pip install "./parl-algos-es[mujoco]"``) a MuJoCo task, with observation
normalisation. ``--address HOST:PORT`` uses a cluster started with ``xparl start``, ``--address
ray`` a local Ray; ``--num-actors 0`` evaluates in the learner's process.
:class:`parl_algos_es.EvolutionHarness` hands each generation's sampling records to the actors
(a few integers each; actors send back one return per record); the tracker evaluates the
unperturbed policy and keeps the best one. ``--help`` lists every flag.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

import parl
from parl.utils import (
    Callback,
    EvalTracker,
    RunResult,
    make_vector_env,
    parse_args,
    save_config,
    summary,
)

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from parl_algos_es import ESAgent, EvolutionHarness, MLPPolicy
from parl_algos_es.harness import GenerationResult


@dataclasses.dataclass(frozen=True)
class Args:
    """ES, CMA-ES or a GA over a small policy's parameters, with remote evaluation actors."""

    env_id: str = "CartPole-v1"
    """Gymnasium id with flat Box observations and Discrete or Box actions."""
    algo: Literal["ES", "CMAES", "GA"] = "ES"
    """Registry name of the evolution strategy."""
    backend: Literal["paddle", "torch"] | None = None
    """The policy's framework: paddle or torch; None: parl.get_backend() (PARL_BACKEND, else
    the installed one). The search itself is numpy."""
    seed: int = 0
    """Seeds the framework, numpy, the search and the episodes."""
    generations: int = 40
    """Updates of the search distribution."""
    population_size: int = 20
    """Candidates per generation (ES: even, antithetic pairs)."""
    noise_stdev: float = 0.1
    """ES: σ of the perturbations; CMAES: the initial step size sigma0; GA: the mutation σ."""
    stepsize: float = 0.05
    """ES: the optimizer's learning rate."""
    l2_coeff: float = 0.005
    """ES: weight decay."""
    optimizer: Literal["sgd", "momentum", "adam"] = "adam"
    """ES: the optimizer over the flat parameters."""
    noise_table_size: int = 25_000_000
    """ES: numbers in the shared noise table (float32), built once per machine (1M or more)
    or per process."""
    parents: int = 5
    """GA: the best candidates that breed the next generation."""
    hidden_sizes: tuple[int, ...] = ()
    """Widths of the policy's tanh hidden layers; () is a linear policy."""
    normalize_observations: bool | None = None
    """Normalise observations with running statistics merged from the actors; None: on for
    Box action spaces (MuJoCo), off for Discrete ones."""
    episodes_per_candidate: int = 1
    """Episodes averaged into one candidate's return."""
    address: str | None = None
    """Where actors run: an xparl HOST:PORT, "ray" or "ray://HOST:PORT"; None: an embedded
    xparl cluster."""
    num_actors: int = 2
    """Remote evaluation actors; 0 evaluates in the learner's process."""
    mode: Literal["sync", "async"] = "sync"
    """sync: every generation is evaluated in full; async (ES): update on the first
    results_per_update returns."""
    results_per_update: int | None = None
    """async: the returns one update waits for; None: population_size."""
    generation_timeout_s: float = 600.0
    """The longest one generation may take before the run stops with an error."""
    eval_every: int = 10_000
    """Environment steps (of the candidates' episodes) between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation of the unperturbed policy."""
    target: float | None = 475.0
    """The evaluation return whose first reach is reported."""
    stop_at_target: bool = False
    """End the run at the first evaluation that reaches target."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/<algo>_<env>_seed<seed> if None."""
    quiet: bool = False
    """Print no line per generation."""


def algorithm_options(args: Any) -> dict[str, Any]:
    """The chosen algorithm's config from the settings (shared with ``evokit_offline.py``)."""
    if args.algo == "ES":
        return {
            "population_size": args.population_size,
            "noise_stdev": args.noise_stdev,
            "stepsize": args.stepsize,
            "l2_coeff": args.l2_coeff,
            "optimizer": args.optimizer,
            "noise_table_size": args.noise_table_size,
        }
    if args.algo == "CMAES":
        return {"population_size": args.population_size, "sigma0": args.noise_stdev}
    return {
        "population_size": args.population_size,
        "mutation_stdev": args.noise_stdev,
        "parents": args.parents,
    }


def build_agent(
    args: Any,
    env_spaces: tuple[gym.Space, gym.Space],
    normalize: bool | None = None,
    backend: str | None = None,
) -> ESAgent:
    """The policy, the algorithm (from the registry) and the agent; the actors call this too,
    so it must build the same agent in every process. ``normalize``: observation
    normalisation; None turns it on for Box action spaces (MuJoCo). ``backend``: the policy's
    framework, resolved once by the learner so that every actor builds the same."""
    obs_space, act_space = env_spaces
    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise ValueError(
            f"{args.env_id}: this example needs flat Box observations, got {obs_space}"
        )
    if isinstance(act_space, gym.spaces.Discrete):
        act_dim = int(act_space.n)
    elif isinstance(act_space, gym.spaces.Box) and len(act_space.shape) == 1:
        act_dim = act_space.shape[0]
    else:
        raise ValueError(f"{args.env_id}: needs Discrete or flat Box actions, got {act_space}")
    model = MLPPolicy(obs_space.shape[0], act_dim, args.hidden_sizes, backend=backend)
    algorithm = parl.algorithms.get(args.algo)(model, seed=args.seed, **algorithm_options(args))
    if normalize is None:
        normalize = isinstance(act_space, gym.spaces.Box)
    return ESAgent(
        algorithm,
        act_space,
        observation_shape=obs_space.shape,
        normalize_observations=normalize,
    )


def env_spaces(env_id: str) -> tuple[gym.Space, gym.Space]:
    """The observation and action spaces of ``env_id``."""
    env = gym.make(env_id)
    env.close()
    return env.observation_space, env.action_space


def generation_metrics(result: GenerationResult, update_norm: float) -> dict[str, float]:
    """What one generation logs: the population's returns, the update and the learner's share."""
    metrics = {
        "charts/population_return_mean": result.stats["reward_mean"],
        "charts/population_return_max": result.stats["reward_max"],
        "charts/update_norm": update_norm,
        "charts/learner_time_share": result.learner_s / max(result.wall_s, 1e-9),
    }
    others = {k: v for k, v in result.stats.items() if not k.startswith("reward_")}
    return metrics | {f"losses/{name}": value for name, value in others.items()}


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every generation, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/{args.algo}_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    make_agent = partial(
        build_agent, args, env_spaces(args.env_id), args.normalize_observations, backend
    )
    agent = make_agent()
    harness = EvolutionHarness(
        agent,
        make_agent,
        args.env_id,
        num_actors=args.num_actors,
        mode=args.mode,
        results_per_update=args.results_per_update,
        episodes_per_candidate=args.episodes_per_candidate,
        generation_timeout_s=args.generation_timeout_s,
        address=args.address,
        seed=args.seed,
    )
    tracker = EvalTracker(
        agent,  # predicts with the unperturbed policy (and the merged observation statistics)
        make_vector_env(args.env_id, args.eval_episodes),
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        seed=args.seed,
        run_dir=run_dir,
        env_id=args.env_id,
        target=args.target,
        stop_at_target=args.stop_at_target,
        callbacks=callbacks,
    )

    env_steps, wall_s, learner_s = 0, 0.0, 0.0
    try:
        for _ in range(args.generations):
            before = agent.alg.flat.get()
            result = harness.run_generation()
            update_norm = float(np.linalg.norm(agent.alg.flat.get() - before))
            env_steps += result.env_steps
            wall_s, learner_s = wall_s + result.wall_s, learner_s + result.learner_s
            metrics = generation_metrics(result, update_norm)
            if not args.quiet:
                left = wall_s / result.generation * (args.generations - result.generation)
                print(
                    f"generation {result.generation}/{args.generations}: population return mean "
                    f"{result.stats['reward_mean']:.1f} max {result.stats['reward_max']:.1f}, "
                    f"{env_steps} env steps, update norm {update_norm:.4f}, learner "
                    f"{metrics['charts/learner_time_share']:.1%} of {result.wall_s:.2f} s "
                    f"[{tqdm.format_interval(wall_s)}<{tqdm.format_interval(left)}]",
                    flush=True,  # a line per generation in a log file too, not a buffer's worth
                )
            if tracker.update(env_steps, metrics):
                break
    finally:
        harness.close()
    result = tracker.finish(
        env_steps,
        generations=harness.generation,
        learner_time_share=learner_s / max(wall_s, 1e-9),
        replaced_actors=harness.replaced,
    )
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
