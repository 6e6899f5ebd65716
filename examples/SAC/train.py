"""Train SAC, OAC, TD3 or DDPG on a continuous-control task (Pendulum-v1 by default).

``python examples/SAC/train.py`` trains SAC with automatic entropy tuning on Pendulum-v1;
``--env-id HalfCheetah-v5`` (``pip install "parl-algos-ac[mujoco]"``) a MuJoCo task; ``--algo
OAC`` SAC with optimistic exploration, ``--algo TD3`` or ``--algo DDPG`` the deterministic ones
(``examples/OAC/train.py``, ``examples/TD3/train.py`` and ``examples/DDPG/train.py`` run this
script with those flags). ``--help`` lists every flag.

The agent acts in ``[-1, 1]``; ``parl.env.ActionMappingWrapper`` maps actions onto the
environment's bounds. Transitions are stored with ``terminal = terminated``, so episodes cut by
the time limit still bootstrap. Losses are read back from the device only when they are logged.

``--backend torch`` trains the same classes on torch with the same settings, ``--device cuda``
on a GPU, where the replay memory lives on the GPU too (``DeviceReplayMemory``: no
host-to-device copy per gradient step). ``--num-envs N`` steps N environments with one batched
forward pass and takes N gradient steps per vector step (one per environment step, as with one
environment).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import parl
from parl.env import ActionMappingWrapper
from parl.utils import (
    Callback,
    EvalTracker,
    RolloutCollector,
    RunResult,
    make_replay_memory,
    make_vector_env,
    parse_args,
    progress_bar,
    save_config,
    summary,
)

import gymnasium as gym
import numpy as np

from parl_algos_ac import ContinuousAgent, DeterministicActorCritic, GaussianActorCritic


@dataclasses.dataclass(frozen=True)
class Args:
    """SAC, OAC, TD3 or DDPG with a replay memory on an env with a bounded Box action space."""

    env_id: str = "Pendulum-v1"
    """Gymnasium id with flat Box observations and a bounded Box action space."""
    algo: Literal["SAC", "OAC", "TD3", "DDPG"] = "SAC"
    """Registry name of the algorithm."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend()."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    compile: bool = False
    """Capture each update with torch.compile (CUDA graphs on a GPU); paddle runs eagerly."""
    seed: int = 0
    """Seeds the framework, numpy, the environment, the replay memory and exploration."""
    total_steps: int = 10_000
    """Environment steps; one gradient step per step after learning_starts."""
    num_envs: int = 1
    """Environments stepped together (autoreset in the same step)."""
    env_engine: Literal["gymnasium", "envpool"] = "gymnasium"
    """What steps the training environments: gymnasium's SyncVectorEnv, or EnvPool's C++ envs
    on their own threads (pip install "parl-utils[envpool]"; evaluation stays on gymnasium)."""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Widths of the hidden layers of the actor and of each critic."""
    lr: float = 1e-3
    """Learning rate of actor and critic."""
    gamma: float = 0.99
    """Discount factor (rl-baselines3-zoo's Pendulum settings: 0.98 for TD3 and DDPG)."""
    tau: float = 0.005
    """Soft target update rate."""
    expl_noise: float = 0.1
    """Gaussian exploration noise of TD3 and DDPG."""
    beta: float = 4.66
    """OAC's optimism β_UB (the paper's value)."""
    delta: float = 23.53
    """OAC's KL budget δ of the exploration shift (the paper's value)."""
    buffer_size: int = 1_000_000
    """Replay memory capacity."""
    replay_memory: Literal["auto", "host", "device"] = "auto"
    """Where the replay memory lives: host (numpy), device (tensors on --device, sampled there:
    no host-to-device copy per gradient step); auto: device unless --device is cpu (the numpy
    memory made the committed results)."""
    batch_size: int = 256
    """Transitions per gradient step."""
    learning_starts: int = 1_000
    """Steps of uniformly random actions before learning starts."""
    log_every: int = 1_000
    """Environment steps between logged losses."""
    eval_every: int = 1_000
    """Environment steps between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = -200.0
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/<algo>_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def make_env(env_id: str) -> gym.Env:
    """One environment acting in ``[-1, 1]``, recording raw episode returns."""
    return gym.wrappers.RecordEpisodeStatistics(ActionMappingWrapper(gym.make(env_id)))


def make_training_envs(args: Args) -> gym.vector.VectorEnv:
    """``num_envs`` environments acting in ``[-1, 1]``, of gymnasium or of EnvPool."""
    if args.env_engine == "gymnasium":
        return make_vector_env(lambda: make_env(args.env_id), args.num_envs)
    envs = make_vector_env(args.env_id, args.num_envs, engine="envpool", seed=args.seed)
    return gym.wrappers.vector.RescaleAction(envs, -1.0, 1.0)


def build_agent(args: Args, obs_dim: int, act_dim: int, backend: str) -> Any:
    """The model and the algorithm, looked up by name in the registry."""
    options: dict[str, Any] = {"gamma": args.gamma, "tau": args.tau, "compile": args.compile}
    options |= {"actor_lr": args.lr, "critic_lr": args.lr}
    if args.algo in ("SAC", "OAC"):
        model: Any = GaussianActorCritic(
            obs_dim, act_dim, args.hidden_sizes, num_critics=2, backend=backend
        )
        options["alpha"] = "auto"
        if args.algo == "OAC":
            options |= {"beta": args.beta, "delta": args.delta}
    else:
        critics = 2 if args.algo == "TD3" else 1
        model = DeterministicActorCritic(
            obs_dim, act_dim, args.hidden_sizes, num_critics=critics, backend=backend
        )
    algorithm = parl.algorithms.get(args.algo, backend=backend)(model, **options)
    return ContinuousAgent(
        algorithm, expl_noise=args.expl_noise, seed=args.seed, device=args.device
    )


def loss_scalars(agent: Any, losses: Any) -> dict[str, float]:
    """The scalars to log from what ``learn`` returned (TD3 returns the critic loss only)."""
    if not isinstance(losses, tuple):
        return {"losses/critic_loss": float(losses)}
    scalars = {"losses/critic_loss": float(losses[0]), "losses/actor_loss": float(losses[1])}
    alpha_loss = getattr(agent.alg, "alpha_loss", None)
    if alpha_loss is not None:
        scalars |= {"losses/alpha": float(agent.alg.alpha), "losses/alpha_loss": float(alpha_loss)}
    return scalars


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every step, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/{args.algo}_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    envs = make_training_envs(args)
    obs_space, act_space = envs.single_observation_space, envs.single_action_space
    if not isinstance(act_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise ValueError(
            f"{args.env_id} has observation space {obs_space} and action space {act_space}; "
            "this example needs flat Box observations and Box actions"
        )
    obs_dim, act_dim = obs_space.shape[0], act_space.shape[0]
    agent = build_agent(args, obs_dim, act_dim, backend)
    rpm = make_replay_memory(
        args.buffer_size,
        obs_dim,
        act_dim,
        where=args.replay_memory,
        device=args.device,
        backend=backend,
        seed=args.seed,
    )
    random_actions = np.random.default_rng(args.seed)
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

    collector = RolloutCollector(envs, seed=args.seed)
    losses: Any = None
    next_log = args.log_every
    bar = progress_bar(
        args.total_steps, f"{args.algo} {args.env_id}", unit="step", disable=args.quiet
    )
    while collector.env_steps < args.total_steps:
        if collector.env_steps < args.learning_starts:
            actions = random_actions.uniform(-1, 1, (args.num_envs, act_dim)).astype(np.float32)
        else:
            actions = agent.sample(collector.obs)
        step = collector.step(actions)
        rpm.append_batch(step.obs, step.actions, step.rewards, step.next_obs, step.terminations)
        if collector.env_steps >= args.learning_starts:
            for _ in range(args.num_envs):
                losses = agent.learn(*rpm.sample_batch(args.batch_size))
        bar.update(args.num_envs)
        metrics = {}
        if collector.env_steps >= next_log:
            next_log += args.log_every
            collector.log_episodes()
            metrics = loss_scalars(agent, losses) if losses is not None else {}
        if tracker.update(collector.env_steps, metrics):
            break
    bar.close()
    result = tracker.finish(collector.env_steps, algo=args.algo)
    envs.close()
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
