"""Train CQL, IQL or behaviour cloning from a fixed dataset (offline RL), Pendulum-v1 by default.

``python examples/CQL/train.py --build medium`` first trains SAC for ``--behaviour-steps``
steps and records ``--dataset-size`` transitions of that partly trained policy (D4RL's
"medium"); ``--build medium-replay`` keeps instead every transition of that SAC run (its whole
replay stream), ``--build expert`` trains SAC for ``--expert-steps``, ``--build random`` acts
uniformly. The dataset is written beside the run as D4RL-layout HDF5 and can be reused with
``--dataset <file>.hdf5``, or kept with ``--dataset-cache DIR``: a later run with the same build
settings (CQL, IQL and BC on one dataset) loads it instead of training SAC again, and a medium
build keeps its SAC run's medium-replay dataset there too. ``--dataset`` also takes a D4RL
file or a Minari dataset directory (``minari download <id>`` puts them in
``~/.minari/datasets/<id>``) already on disk: nothing is downloaded. ``--algo IQL`` (or
``examples/IQL/train.py``) trains IQL, ``--algo BC`` clones the dataset's actions (IQL with
temperature 0: every action weighs 1).

Offline runs count gradient steps: ``env_steps`` in the result and ``--total-steps`` are
``learn`` calls, and evaluations play the greedy policy in the real environment. Needs
``pip install "parl-algos-ac[offline]"``. ``--backend torch`` trains (and builds) on torch with
the same settings, ``--device cuda`` on a GPU.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import parl
from parl.env import ActionMappingWrapper
from parl.utils import (
    Callback,
    EvalTracker,
    ReplayMemory,
    RolloutCollector,
    RunResult,
    make_vector_env,
    parse_args,
    progress_bar,
    save_config,
    summary,
)
from parl.utils.offline import (
    DatasetRecorder,
    collect,
    dataset_digest,
    episode_returns,
    load_d4rl_hdf5,
    load_minari,
    save_d4rl_hdf5,
)

import gymnasium as gym
import numpy as np

from parl_algos_ac import ContinuousAgent, GaussianActorCritic, GaussianActorCriticValue


@dataclasses.dataclass(frozen=True)
class Args:
    """CQL, IQL or behaviour cloning from a dataset on disk or one built here."""

    env_id: str = "Pendulum-v1"
    """Gymnasium id the dataset comes from, and where the policy is evaluated."""
    algo: Literal["CQL", "IQL", "BC"] = "CQL"
    """CQL, IQL, or BC (IQL with temperature 0: plain maximum likelihood of the data's actions)."""
    dataset: str | None = None
    """A D4RL-layout .hdf5 file or a Minari dataset directory; None needs --build."""
    build: Literal["random", "medium", "medium-replay", "expert"] | None = None
    """Build this dataset (written to <logdir>/dataset-<kind>.hdf5) instead of loading one."""
    behaviour_steps: int = 5_000
    """SAC's training steps for the medium and medium-replay datasets."""
    expert_steps: int = 20_000
    """SAC's training steps for the expert dataset."""
    dataset_size: int = 10_000
    """Transitions recorded for the random, medium and expert datasets."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend()."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    compile: bool = False
    """Capture each update with torch.compile (CUDA graphs on a GPU); paddle runs eagerly."""
    dataset_cache: str | None = None
    """A folder keeping built datasets by their build settings, to load instead of rebuilding
    (delete it after changing the builder's code: the key is the settings, not the code)."""
    seed: int = 0
    """Seeds the framework, numpy, the environments, the dataset builder and sampling."""
    total_steps: int = 10_000
    """Gradient steps (learn calls)."""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Widths of the hidden layers of the actor, each critic and IQL's value network."""
    actor_lr: float = 1e-4
    """Actor learning rate (PARL's CQL example: 1e-4)."""
    critic_lr: float = 3e-4
    """Critic (and IQL's value) learning rate."""
    gamma: float = 0.99
    """Discount factor."""
    min_q_weight: float = 5.0
    """CQL's penalty weight."""
    with_lagrange: bool = False
    """CQL: learn the penalty's weight against lagrange_thresh."""
    lagrange_thresh: float = 10.0
    """CQL's target action gap with --with-lagrange."""
    policy_eval_start: int = 1_000
    """CQL: gradient steps of behaviour cloning before the actor follows Q."""
    expectile: float = 0.7
    """IQL's expectile τ."""
    temperature: float = 3.0
    """IQL's advantage temperature β."""
    batch_size: int = 256
    """Transitions per gradient step."""
    log_every: int = 1_000
    """Gradient steps between logged losses."""
    eval_every: int = 1_000
    """Gradient steps between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = None
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory; runs/<algo>_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


# The behaviour SAC's settings: random actions first, batch and actor learning rate as in
# examples/SAC/train.py; the critics keep SAC's default rate (3e-4).
BEHAVIOUR_LEARNING_STARTS, BEHAVIOUR_BATCH_SIZE, BEHAVIOUR_ACTOR_LR = 1_000, 256, 1e-3
#: The settings each kind of built dataset depends on, besides the env, the kind and the seed.
#: The SAC-built ones depend on the framework too (its draws differ), see ``backend_of``.
BUILD_SETTINGS = {
    "random": ("dataset_size",),
    "medium": ("behaviour_steps", "dataset_size", "hidden_sizes", "gamma", "backend"),
    "medium-replay": ("behaviour_steps", "hidden_sizes", "gamma", "backend"),
    "expert": ("expert_steps", "dataset_size", "hidden_sizes", "gamma", "backend"),
}


def backend_of(args: Args) -> str:
    """The framework the run trains on: ``--backend``, else :func:`parl.get_backend`."""
    return args.backend or parl.get_backend()


def make_env(env_id: str) -> gym.Env:
    """One environment acting in ``[-1, 1]``, recording raw episode returns."""
    return gym.wrappers.RecordEpisodeStatistics(ActionMappingWrapper(gym.make(env_id)))


def train_behaviour_sac(args: Args, steps: int) -> tuple[ContinuousAgent, dict[str, np.ndarray]]:
    """Train SAC (auto α) for ``steps`` env steps; return it and its whole replay stream."""
    envs = make_vector_env(lambda: make_env(args.env_id), 1)
    obs_dim = envs.single_observation_space.shape[0]
    act_dim = envs.single_action_space.shape[0]
    model = GaussianActorCritic(obs_dim, act_dim, args.hidden_sizes, backend=backend_of(args))
    sac = parl.algorithms.get("SAC", backend=backend_of(args))(
        model, gamma=args.gamma, alpha="auto", actor_lr=BEHAVIOUR_ACTOR_LR
    )
    agent = ContinuousAgent(sac, seed=args.seed, device=args.device)
    rpm = ReplayMemory(steps, obs_dim=obs_dim, act_dim=act_dim, seed=args.seed)
    recorder, random_actions = DatasetRecorder(), np.random.default_rng(args.seed)
    collector = RolloutCollector(envs, seed=args.seed)
    bar = progress_bar(steps, f"behaviour SAC {args.env_id}", unit="step", disable=args.quiet)
    while collector.env_steps < steps:
        if collector.env_steps < BEHAVIOUR_LEARNING_STARTS:
            actions = random_actions.uniform(-1, 1, (1, act_dim)).astype(np.float32)
        else:
            actions = agent.sample(collector.obs)
        step = collector.step(actions)
        recorder.add(step)
        rpm.append_batch(step.obs, step.actions, step.rewards, step.next_obs, step.terminations)
        if collector.env_steps >= BEHAVIOUR_LEARNING_STARTS:
            agent.learn(*rpm.sample_batch(BEHAVIOUR_BATCH_SIZE))
        bar.update(1)
    bar.close()
    envs.close()
    return agent, recorder.to_dict()


def cached_dataset_path(args: Args, kind: str) -> Path:
    """Where ``--dataset-cache`` keeps the ``kind`` dataset of these settings."""
    assert args.dataset_cache is not None
    settings = {name: getattr(args, name) for name in BUILD_SETTINGS[kind]}
    if "backend" in settings:
        settings["backend"] = backend_of(args)
    settings |= {"env_id": args.env_id, "build": kind, "seed": args.seed}
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    return Path(args.dataset_cache) / f"{args.env_id}-{kind}-seed{args.seed}-{digest}.hdf5"


def build_dataset(args: Args, run_dir: Path) -> tuple[dict[str, np.ndarray], Path]:
    """Make the ``--build`` dataset and save it beside the run (and in ``--dataset-cache``)."""
    assert args.build is not None
    envs = make_vector_env(lambda: make_env(args.env_id), 1)
    replay = None
    if args.build == "random":
        rng = np.random.default_rng(args.seed)
        act_dim = envs.single_action_space.shape[0]
        policy: Any = lambda obs: rng.uniform(-1, 1, (len(obs), act_dim)).astype(np.float32)  # noqa: E731
    else:
        steps = args.expert_steps if args.build == "expert" else args.behaviour_steps
        agent, replay = train_behaviour_sac(args, steps)
        policy = agent.sample
    if args.build == "medium-replay":
        assert replay is not None
        data = replay
    else:
        data = collect(envs, policy, args.dataset_size, seed=args.seed + 1)
    envs.close()
    if args.dataset_cache is not None:
        save_d4rl_hdf5(data, cached_dataset_path(args, args.build))
        if args.build == "medium" and replay is not None:  # the same SAC run's medium-replay
            save_d4rl_hdf5(replay, cached_dataset_path(args, "medium-replay"))
    return data, save_d4rl_hdf5(data, run_dir / f"dataset-{args.build}.hdf5")


def load_dataset(args: Args, run_dir: Path) -> tuple[dict[str, np.ndarray], str]:
    """The dataset of ``--dataset`` or ``--build``, and where it is."""
    if (args.dataset is None) == (args.build is None):
        raise ValueError("give exactly one of --dataset PATH and --build KIND")
    if args.build is not None:
        cached = cached_dataset_path(args, args.build) if args.dataset_cache else None
        if cached is not None and cached.is_file():
            return load_d4rl_hdf5(cached), str(cached)
        data, path = build_dataset(args, run_dir)
        return data, str(path)
    if args.dataset_cache is not None:
        raise ValueError(
            "--dataset-cache keeps datasets that --build makes; drop it when giving --dataset"
        )
    assert args.dataset is not None
    path = Path(args.dataset)
    return (load_minari(path) if path.is_dir() else load_d4rl_hdf5(path)), str(path)


def dataset_facts(data: dict[str, np.ndarray], source: str) -> dict[str, Any]:
    """What a result records of the dataset it learnt from: where it was, its size, the mean
    return of its episodes (the behaviour policy's) and the digest of its contents, which tells
    whether two runs learnt from the same transitions wherever the file lay."""
    behaviour = episode_returns(data)
    return {
        "dataset": source,
        "dataset_size": len(data["rewards"]),
        "behaviour_return": float(behaviour.mean()) if len(behaviour) else None,
        "dataset_digest": dataset_digest(data),
    }


def build_agent(args: Args, obs_dim: int, act_dim: int) -> ContinuousAgent:
    """CQL, IQL or BC from the registry."""
    backend = backend_of(args)
    common: dict[str, Any] = {"gamma": args.gamma, "actor_lr": args.actor_lr}
    common |= {"critic_lr": args.critic_lr, "compile": args.compile}
    if args.algo in ("IQL", "BC"):
        model: Any = GaussianActorCriticValue(obs_dim, act_dim, args.hidden_sizes, backend=backend)
        options = {"value_lr": args.critic_lr, "expectile": args.expectile}
        options["temperature"] = args.temperature if args.algo == "IQL" else 0.0
        iql = parl.algorithms.get("IQL", backend=backend)(model, **common, **options)
        return ContinuousAgent(iql, device=args.device)
    model = GaussianActorCritic(obs_dim, act_dim, args.hidden_sizes, backend=backend)
    options = {
        "min_q_weight": args.min_q_weight,
        "with_lagrange": args.with_lagrange,
        "lagrange_thresh": args.lagrange_thresh,
        "policy_eval_start": args.policy_eval_start,
    }
    cql = parl.algorithms.get("CQL", backend=backend)(model, **common, **options)
    return ContinuousAgent(cql, device=args.device)


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every step, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/{args.algo}_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    parl.set_seed(args.seed, backend=backend_of(args))

    data, source = load_dataset(args, run_dir)
    parl.set_seed(
        args.seed, backend=backend_of(args)
    )  # the learner starts alike whether the dataset was built or loaded
    obs_dim, act_dim = data["observations"].shape[1], data["actions"].shape[1]
    rpm = ReplayMemory(len(data["rewards"]), obs_dim=obs_dim, act_dim=act_dim, seed=args.seed)
    rpm.load_from_d4rl(data)
    agent = build_agent(args, obs_dim, act_dim)
    tracker = EvalTracker(
        agent,
        make_vector_env(lambda: make_env(args.env_id), args.eval_episodes),
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
        args.total_steps, f"{args.algo} {args.env_id}", unit="gradient step", disable=args.quiet
    )
    for step in range(1, args.total_steps + 1):
        bar.update(1)
        losses = agent.learn(*rpm.sample_batch(args.batch_size))
        metrics = {}
        if step % args.log_every == 0:
            names = ("critic_loss", "value_loss", "actor_loss")
            if args.algo == "CQL":
                names = ("critic_loss", "mse", "actor_loss", "min_q")
            metrics = {f"losses/{n}": float(x) for n, x in zip(names, losses, strict=True)}
            if args.algo == "CQL":
                metrics["losses/cql_penalty"] = float(agent.alg.penalty)
        if tracker.update(step, metrics):
            break
    bar.close()
    result = tracker.finish(
        step,
        algo=args.algo,
        **dataset_facts(data, source),
        steps_are="gradient steps",
    )
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
