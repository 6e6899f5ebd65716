"""Train MADDPG on a multi-agent particle environment (simple_spread by default).

``python examples/MADDPG/train.py`` trains three cooperating agents on ``simple_spread`` with
PARL's MPE settings (``--help`` lists every flag; ``--env-id simple_speaker_listener``,
``simple_adversary``, … pick another of PARL's scenarios, ``--continuous-actions`` Box actions).
Needs ``pip install "parl-algos-marl[mpe]"``.

Every agent has its own actor, centralised critic and replay memory
(:class:`parl_algos_marl.MADDPGAgent`); each env step stores one transition per agent and calls
every agent's ``learn``, which steps every ``learn_every`` calls. Transitions are stored with
``terminal = terminated``: the 25-step time limit is a truncation, so its last step bootstraps.
The team's greedy policy is evaluated on :class:`parl.env.multiagent_env.TeamEnv`, whose return
is the sum of the agents' rewards over an episode (PARL's "mean episode reward").
``--backend torch`` trains the same classes on torch, ``--device cuda`` on a GPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import parl
from parl.env.multiagent_env import ParallelEnvAdapter, ParticleEnv, TeamEnv
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

import gymnasium as gym
import numpy as np

from parl_algos_marl import AgentTeam, MADDPGAgent, MAModel


@dataclasses.dataclass(frozen=True)
class Args:
    """MADDPG (one actor, critic and replay memory per agent) on a particle scenario."""

    env_id: str = "simple_spread"
    """PARL's particle scenario (simple, simple_spread, simple_speaker_listener, ...)."""
    continuous_actions: bool = False
    """Box actions in [-1, 1] instead of discrete ones."""
    max_cycles: int = 25
    """Steps per episode (PARL: 25)."""
    seed: int = 0
    """Seeds the framework, numpy, the environment and the replay memories."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend() (PARL_BACKEND, else the installed)."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    compile: bool = False
    """Capture each update with torch.compile (CUDA graphs on a GPU); paddle runs eagerly."""
    total_steps: int = 100_000
    """Environment steps (each is one step of every agent)."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the hidden layers of every actor and critic."""
    actor_lr: float = 1e-2
    """Learning rate of the actors."""
    critic_lr: float = 1e-2
    """Learning rate of the critics."""
    gamma: float = 0.95
    """Discount factor."""
    tau: float = 0.01
    """Soft target update rate."""
    buffer_size: int = 1_000_000
    """Replay memory capacity of each agent."""
    batch_size: int = 1024
    """Transitions per learn step."""
    min_memory_size: int = 25_600
    """Transitions stored before learning starts (PARL: 25 batches)."""
    learn_every: int = 100
    """Environment steps between learn steps of each agent."""
    log_every: int = 2_500
    """Environment steps between logged losses."""
    eval_every: int = 10_000
    """Environment steps between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = None
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/MADDPG_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def make_env(args: Args) -> ParallelEnvAdapter:
    """The scenario with PARL's settings, as lists with one entry per agent."""
    return ParticleEnv(args.env_id, args.continuous_actions, args.max_cycles)


def build_agents(args: Args, env: ParallelEnvAdapter, backend: str) -> list[MADDPGAgent]:
    """One MADDPG agent per agent of the env, each with its own replay memory."""
    critic_in_dim = sum(env.obs_shape_n) + sum(env.act_shape_n)
    agents = []
    for index in range(env.n):
        model = MAModel(
            env.obs_shape_n[index],
            env.act_shape_n[index],
            critic_in_dim,
            args.continuous_actions,
            args.hidden_sizes,
            backend=backend,
        )
        algorithm = parl.algorithms.get("MADDPG", backend=backend)(
            model,
            agent_index=index,
            act_space=env.action_space,
            gamma=args.gamma,
            tau=args.tau,
            actor_lr=args.actor_lr,
            critic_lr=args.critic_lr,
            compile=args.compile,
        )
        agents.append(
            MADDPGAgent(
                algorithm,
                env.obs_shape_n,
                env.act_shape_n,
                batch_size=args.batch_size,
                memory_size=args.buffer_size,
                min_memory_size=args.min_memory_size,
                learn_every=args.learn_every,
                seed=args.seed + index,
                device=args.device,
            )
        )
    return agents


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every step, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/MADDPG_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    env = make_env(args)
    agents = build_agents(args, env, backend)
    team = AgentTeam(agents)
    tracker = EvalTracker(
        team,
        make_vector_env(
            lambda: gym.wrappers.RecordEpisodeStatistics(TeamEnv(make_env(args))),
            args.eval_episodes,
        ),
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        seed=args.seed,
        run_dir=run_dir,
        env_id=args.env_id,
        target=args.target,
        callbacks=callbacks,
    )

    obs_n, _ = env.reset(seed=args.seed)
    episode_return, episode_returns = 0.0, []
    critic_losses: list[float] = []
    next_log = args.log_every
    bar = progress_bar(args.total_steps, f"MADDPG {args.env_id}", unit="step", disable=args.quiet)
    for step in range(1, args.total_steps + 1):
        act_n = [agent.sample(obs) for agent, obs in zip(agents, obs_n, strict=True)]
        next_obs_n, reward_n, terminated_n, truncated_n, _ = env.step(act_n)
        for i, agent in enumerate(agents):
            agent.add_experience(obs_n[i], act_n[i], reward_n[i], next_obs_n[i], terminated_n[i])
        episode_return += sum(reward_n)
        obs_n = next_obs_n
        if all(t or u for t, u in zip(terminated_n, truncated_n, strict=True)):
            episode_returns.append(episode_return)
            episode_return = 0.0
            obs_n, _ = env.reset()
        losses = [agent.learn(agents) for agent in agents]
        critic_losses += [loss for loss in losses if loss is not None]
        bar.update(1)
        metrics = {}
        if step >= next_log:
            next_log += args.log_every
            if episode_returns:
                metrics["charts/episodic_return"] = float(np.mean(episode_returns))
                episode_returns.clear()
            if critic_losses:
                metrics["losses/critic_loss"] = float(np.mean(critic_losses))
                critic_losses.clear()
        if tracker.update(step, metrics):
            break
    bar.close()
    result = tracker.finish(step, algo="MADDPG")
    env.close()
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
