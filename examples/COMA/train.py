"""Train COMA on a cooperative particle environment (simple_spread by default).

``python examples/COMA/train.py`` trains three agents on ``simple_spread`` with EPyMARL's COMA
settings for the particle tasks, on smaller batches at higher learning rates (``--help`` lists
every flag; ``--env-id simple_speaker_listener`` trains the speaker and the listener). Needs
``pip install "parl-algos-marl[mpe]"``. PARL's COMA example runs on StarCraft II (SMAC), whose
game binary no package provides; the particle scenarios install with pip.

The agents share one GRU policy that sees an agent's observation and its one-hot id; the
critic sees the env's global state, the agent's observation and everyone's actions. Agents
with smaller observations or fewer actions than the others (the speaker of
``simple_speaker_listener``) get their observation padded with zeros and their missing actions
marked unavailable. Each update plays ``batch_episodes`` episodes on as many envs, stepped
together with one policy call per step, and learns once from them (COMA is on-policy). The
25-step time limit is a truncation (``terminated = 0``): the critic bootstraps from its value
of the actions the policy picks at the final observation.
``--backend torch`` trains the same classes on torch, ``--device cuda`` on a GPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import parl
from parl.env.multiagent_env import ParallelEnvAdapter, ParticleEnv, TeamEnv, with_agent_ids
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

from parl_algos_marl import COMAAgent, COMAModel, EpisodeReplayBuffer


@dataclasses.dataclass(frozen=True)
class Args:
    """COMA (a shared recurrent policy and a counterfactual centralised critic) on a particle
    scenario."""

    env_id: str = "simple_spread"
    """PARL's particle scenario with discrete actions (simple_spread, simple_speaker_listener)."""
    max_cycles: int = 25
    """Steps per episode."""
    seed: int = 0
    """Seeds the framework, numpy, the environments and the action draws."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend() (PARL_BACKEND, else the installed)."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    total_steps: int = 200_000
    """Environment steps over all environments."""
    batch_episodes: int = 4
    """Episodes played together (one env each) per update (EPyMARL: 10)."""
    rnn_hidden_dim: int = 64
    """Width of the policy and its GRU state."""
    critic_hidden_dim: int = 64
    """Width of the critic's two hidden layers."""
    optimizer: Literal["adam", "rmsprop"] = "adam"
    """Adam (EPyMARL) or RMSProp (PARL)."""
    actor_lr: float = 5e-4
    """The policy's learning rate (EPyMARL: 3e-4)."""
    critic_lr: float = 1e-3
    """The critic's learning rate (EPyMARL: 3e-4)."""
    gamma: float = 0.99
    """Discount factor."""
    td_lambda: float = 0.8
    """Lambda of the critic's TD(lambda) targets."""
    entropy_coef: float = 0.001
    """Weight of the policy's entropy bonus."""
    grad_norm_clip: float = 10.0
    """Global gradient-norm clip of each network."""
    standardise_rewards: bool = True
    """Learn from rewards standardised with running statistics (EPyMARL's option)."""
    update_target_interval: int = 200
    """Updates between copies of the critic into its target."""
    exploration_start: float = 0.0
    """Weight of a uniform choice mixed into the policy at the start (PARL: 0.5)."""
    exploration_end: float = 0.0
    """That weight after exploration_steps (PARL: 0.02)."""
    exploration_steps: int = 50_000
    """Environment steps over which that weight anneals."""
    eval_every: int = 10_000
    """Environment steps between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = None
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/COMA_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def make_env(args: Args) -> ParallelEnvAdapter:
    """The scenario with PARL's settings, as lists with one entry per agent; observations
    zero-padded to the longest, so that one network sees every agent."""
    return ParticleEnv(args.env_id, max_cycles=args.max_cycles, pad_observations=True)


class TeamLayout:
    """One shared network for agents of different sizes: (padded) observations followed by
    the agent's one-hot id; actions past an agent's own marked unavailable."""

    def __init__(self, env: ParallelEnvAdapter) -> None:
        if getattr(env, "continuous_actions", False):
            raise ValueError("COMA needs discrete actions: leave --continuous-actions out")
        self.n, self.obs_dim = env.n, env.obs_shape_n[0]
        self.available = env.available_actions()
        self.n_actions = self.available.shape[1]

    def obs(self, obs_n: Sequence[np.ndarray]) -> np.ndarray:
        """``[..., n, obs_dim + n]`` from one observation (batch) per agent."""
        return with_agent_ids(np.stack(obs_n, axis=-2))


class GreedyTeam:
    """The greedy policy on a vector env of :class:`TeamEnv`: a tuple of observations per
    agent in, a tuple of actions out; the GRU state restarts with every (fixed-length) episode."""

    def __init__(self, agent: COMAAgent, layout: TeamLayout, max_cycles: int) -> None:
        self.agent, self.layout, self.max_cycles, self.calls = agent, layout, max_cycles, 0

    def __call__(self, obs_n: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        if self.calls % self.max_cycles == 0:
            self.agent.reset_agent()
        self.calls += 1
        team = self.layout.obs(obs_n)
        available = np.broadcast_to(
            self.layout.available, (*team.shape[:-1], self.layout.n_actions)
        )
        return tuple(self.agent.predict(team, available).T)


def play_episodes(
    envs: Sequence[ParallelEnvAdapter],
    agent: COMAAgent,
    layout: TeamLayout,
    buffer: EpisodeReplayBuffer,
    seed: int | None,
) -> tuple[int, list[float]]:
    """One episode on each env, stepped together with one ``sample`` call per step, into
    ``buffer`` with the actions sampled at each final observation; returns the env steps and
    the team returns (every agent's rewards summed)."""
    agent.reset_agent()
    available = np.broadcast_to(layout.available, (len(envs), layout.n, layout.n_actions))
    episodes = []
    for index, env in enumerate(envs):
        obs_n, _ = env.reset(seed=None if seed is None else seed + index)
        episodes.append({"state": [env.state()], "obs": [layout.obs(obs_n)], "actions": [],
                         "reward": [], "terminated": [], "return": 0.0, "done": False})  # fmt: skip
    steps = 0
    while True:
        actions = agent.sample(np.stack([e["obs"][-1] for e in episodes]), available)
        for episode, env, action in zip(episodes, envs, actions, strict=True):
            episode["actions"].append(action)
            if episode["done"]:  # the actions at its final observation: stored, not taken
                continue
            obs_n, reward_n, terminated_n, truncated_n, _ = env.step(list(action))
            episode["reward"].append(float(np.mean(reward_n)))
            episode["terminated"].append(all(terminated_n))
            episode["obs"].append(layout.obs(obs_n))
            episode["state"].append(env.state())
            episode["return"] += float(np.sum(reward_n))
            episode["done"] = all(terminated_n) or any(truncated_n)
            steps += 1
        if all(len(e["actions"]) == len(e["obs"]) for e in episodes):
            break
    for episode in episodes:
        rows = len(episode["obs"])
        buffer.add(
            episode["state"],
            episode["obs"],
            np.broadcast_to(layout.available, (rows, layout.n, layout.n_actions)),
            episode["actions"],
            episode["reward"],
            episode["terminated"],
        )
    return steps, [e["return"] for e in episodes]


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every update, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/COMA_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    envs = [make_env(args) for _ in range(args.batch_episodes)]
    layout = TeamLayout(envs[0])
    n, obs_dim, n_actions = layout.n, layout.obs_dim + layout.n, layout.n_actions
    state_dim = envs[0].state_space.shape[0]
    model = COMAModel(
        obs_dim,
        state_dim,
        n,
        n_actions,
        args.rnn_hidden_dim,
        args.critic_hidden_dim,
        backend=backend,
    )
    algorithm = parl.algorithms.get("COMA", backend=backend)(
        model,
        n_actions,
        n,
        grad_norm_clip=args.grad_norm_clip,
        actor_lr=args.actor_lr,
        critic_lr=args.critic_lr,
        gamma=args.gamma,
        td_lambda=args.td_lambda,
        entropy_coef=args.entropy_coef,
        optimizer=args.optimizer,
    )
    # One sample call acts for every env at once: epsilon anneals per call, so per env step.
    agent = COMAAgent(
        algorithm,
        args.exploration_start,
        args.exploration_end,
        max(1, args.exploration_steps // args.batch_episodes),
        args.update_target_interval,
        seed=args.seed,
        standardise_rewards=args.standardise_rewards,
        device=args.device,
    )
    buffer = EpisodeReplayBuffer(
        args.batch_episodes, args.max_cycles, n, obs_dim, state_dim, n_actions, seed=args.seed
    )
    tracker = EvalTracker(
        agent,
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
        policy=GreedyTeam(agent, layout, args.max_cycles),
    )

    step, seed = 0, args.seed * 1_000
    bar = progress_bar(args.total_steps, f"COMA {args.env_id}", unit="step", disable=args.quiet)
    while step < args.total_steps:
        steps, returns = play_episodes(envs, agent, layout, buffer, seed)
        seed = None  # the first resets seed the envs' generators; later episodes continue them
        step += steps
        bar.update(steps)
        stats = agent.learn(*buffer.latest(args.batch_episodes))
        metrics = {
            "charts/episodic_return": float(np.mean(returns)),
            "losses/critic_loss": stats.critic_loss,
            "losses/actor_loss": stats.actor_loss,
            "losses/entropy": stats.entropy,
        }
        if tracker.update(step, metrics):
            break
    bar.close()
    result = tracker.finish(step, algo="COMA")
    for env in envs:
        env.close()
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
