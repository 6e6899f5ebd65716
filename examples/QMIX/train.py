"""Train QMIX on a cooperative particle environment (simple_spread by default).

``python examples/QMIX/train.py`` trains three agents on ``simple_spread`` with PyMARL's QMIX
settings (``--env-id simple_speaker_listener`` trains that scenario's two; ``--help`` lists
every flag). Needs ``pip install "parl-algos-marl[mpe]"``. PARL's
QMIX example runs on StarCraft II (SMAC), whose game binary no package provides; the particle
scenarios install with pip.

The agents share one GRU network that sees an agent's observation and its one-hot id; the
mixer sees the env's global state. Where the agents' observations or action counts differ (the
speaker sees 3 numbers and says one of 3 words, the listener sees 11 and has 5 moves), each
observation is zero-padded to the longest and the actions an agent lacks are marked
unavailable, as EPyMARL does. Whole episodes go into an
:class:`parl_algos_marl.EpisodeReplayBuffer`; after each episode the agent learns from a batch
of them and copies its networks into the targets every ``update_target_interval`` learn steps
(``--target-tau 0.01 --update-target-interval 1``: soft updates instead). The 25-step time
limit is a truncation (``terminated = 0``), so the last step bootstraps. Q_tot regresses on
TD(λ = 0.6) returns (``--td-lambda 0`` for PARL's one-step targets, with which simple_spread's
greedy return drifted down after 50k steps, docs/algorithms/qmix.md); ``--anneal-lr`` anneals
the learning rate to 0 over the run.
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

from parl_algos_marl import EpisodeReplayBuffer, QMIXAgent, QMixerModel, RNNAgentModel


@dataclasses.dataclass(frozen=True)
class Args:
    """QMIX (a shared recurrent agent network and a monotonic mixer) on a particle scenario."""

    env_id: str = "simple_spread"
    """A cooperative particle scenario with discrete actions (simple_spread,
    simple_speaker_listener, ...)."""
    max_cycles: int = 25
    """Steps per episode."""
    seed: int = 0
    """Seeds the framework, numpy, the environment, the buffer and exploration."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend() (PARL_BACKEND, else the installed)."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    compile: bool = False
    """Capture each update with torch.compile (CUDA graphs on a GPU); paddle runs eagerly."""
    total_steps: int = 200_000
    """Environment steps."""
    rnn_hidden_dim: int = 64
    """Width of the agent network and its GRU state."""
    mixing_embed_dim: int = 32
    """Width of the mixer's hidden layer."""
    hypernet_dim: int = 64
    """Width of the hypernetworks' hidden layer."""
    lr: float = 5e-4
    """The optimizer's learning rate."""
    anneal_lr: bool = False
    """Anneal the learning rate linearly from lr to 0 over total_steps (as the MAPPO example)."""
    optimizer: Literal["rmsprop", "adam"] = "adam"
    """Adam (EPyMARL's) or RMSProp (PARL's and PyMARL's): with RMSProp simple_spread's greedy
    return fell from -105 at 40k steps to -150 at 100k, with Adam it stayed near -110."""
    gamma: float = 0.99
    """Discount factor."""
    double_q: bool = True
    """Double Q-learning targets."""
    clip_grad_norm: float = 10.0
    """Global gradient-norm clip."""
    td_lambda: float = 0.6
    """TD(λ) targets for Q_tot, in [0, 1] (pymarl2's td_lambda); 0: one-step targets (PARL's
    and EPyMARL's), which left simple_spread drifting down after 50k steps."""
    standardise_rewards: bool = True
    """Learn from rewards standardised with running statistics (EPyMARL's option): the
    particle envs' large negative rewards otherwise drown the differences between actions."""
    buffer_episodes: int = 5_000
    """Episodes kept in the replay buffer."""
    batch_episodes: int = 32
    """Episodes per learn step."""
    update_target_interval: int = 200
    """Learn steps between target updates."""
    target_tau: float = 1.0
    """The fraction of the way each target update moves the targets: 1 copies; with
    update_target_interval 1, e.g. 0.01 is EPyMARL's soft update."""
    exploration_start: float = 1.0
    """Epsilon at the start."""
    exploration_end: float = 0.05
    """Epsilon after exploration_steps."""
    exploration_steps: int = 50_000
    """Environment steps over which epsilon anneals."""
    log_every: int = 5_000
    """Environment steps between logged losses."""
    eval_every: int = 10_000
    """Environment steps between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = None
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/QMIX_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def make_env(args: Args) -> ParallelEnvAdapter:
    """The scenario with PARL's settings, as lists with one entry per agent; observations
    zero-padded to the longest, so that one network sees every agent."""
    return ParticleEnv(args.env_id, max_cycles=args.max_cycles, pad_observations=True)


def agent_inputs(obs_n: Sequence[np.ndarray]) -> np.ndarray:
    """One (padded) observation or batch per agent → ``[..., n, obs_dim + n]`` with ids."""
    return with_agent_ids(np.stack(obs_n, axis=-2))


class GreedyTeam:
    """The greedy policy on a vector env of :class:`TeamEnv`: a tuple of observations per
    agent in, a tuple of actions out; the GRU state restarts with every (fixed-length) episode."""

    def __init__(self, agent: QMIXAgent, max_cycles: int, available: np.ndarray) -> None:
        self.agent, self.max_cycles, self.calls = agent, max_cycles, 0
        self.available = available

    def __call__(self, obs_n: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        if self.calls % self.max_cycles == 0:
            self.agent.reset_agent()
        self.calls += 1
        inputs = agent_inputs(obs_n)
        available = np.broadcast_to(self.available, inputs.shape[:-1] + self.available.shape[-1:])
        return tuple(self.agent.predict(inputs, available).T)


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every step, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/QMIX_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    env = make_env(args)
    if env.continuous_actions:
        raise ValueError(
            f"{args.env_id} was made with continuous actions; QMIX needs discrete ones (e.g. "
            "simple_spread)"
        )
    obs_dim, n_act, n = env.obs_shape_n[0], max(env.act_shape_n), env.n
    state_dim = env.state_space.shape[0]
    available = env.available_actions()
    algorithm = parl.algorithms.get("QMIX", backend=backend)(
        RNNAgentModel(obs_dim + n, n_act, args.rnn_hidden_dim, backend=backend),
        QMixerModel(n, state_dim, args.mixing_embed_dim, args.hypernet_dim, backend=backend),
        double_q=args.double_q,
        gamma=args.gamma,
        lr=args.lr,
        clip_grad_norm=args.clip_grad_norm,
        compile=args.compile,
        optimizer=args.optimizer,
        td_lambda=args.td_lambda,
    )
    agent = QMIXAgent(
        algorithm,
        n_act,
        args.exploration_start,
        args.exploration_end,
        args.exploration_steps,
        args.update_target_interval,
        seed=args.seed,
        standardise_rewards=args.standardise_rewards,
        device=args.device,
        target_tau=args.target_tau,
    )
    buffer = EpisodeReplayBuffer(
        args.buffer_episodes, args.max_cycles, n, obs_dim + n, state_dim, n_act, seed=args.seed
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
        policy=GreedyTeam(agent, args.max_cycles, available),
    )

    step, seed = 0, args.seed
    returns: list[float] = []
    losses: list[tuple[float, float]] = []
    next_log = args.log_every
    bar = progress_bar(args.total_steps, f"QMIX {args.env_id}", unit="step", disable=args.quiet)
    stop = False
    while step < args.total_steps and not stop:
        obs_n, _ = env.reset(seed=seed)
        seed = None  # the first reset seeds the env's generator; later episodes continue it
        agent.reset_agent()
        states, observations, actions, rewards, terminals = [env.state()], [], [], [], []
        observations.append(agent_inputs(obs_n))
        done = False
        while not done:
            action = agent.sample(observations[-1], available)
            obs_n, reward_n, terminated_n, truncated_n, _ = env.step(list(action))
            actions.append(action)
            rewards.append(float(np.mean(reward_n)))
            terminals.append(all(terminated_n))
            observations.append(agent_inputs(obs_n))
            states.append(env.state())
            done = all(terminated_n) or any(truncated_n)
            step += 1
            bar.update(1)
        every_step = np.broadcast_to(available, (len(actions) + 1, n, n_act))
        buffer.add(states, observations, every_step, actions, rewards, terminals)
        returns.append(float(np.sum(rewards)) * n)
        if len(buffer) >= args.batch_episodes:
            lr = args.lr * (1.0 - step / args.total_steps) if args.anneal_lr else None
            losses.append(agent.learn(*buffer.sample_batch(args.batch_episodes), lr=lr))
        metrics = {}
        if step >= next_log:
            next_log += args.log_every
            metrics["charts/episodic_return"] = float(np.mean(returns))
            metrics["charts/epsilon"] = agent.epsilon
            returns.clear()
            if losses:
                loss, td_error = np.mean(losses, axis=0)
                metrics["losses/td_loss"], metrics["losses/td_error"] = float(loss), float(td_error)
                losses.clear()
        stop = tracker.update(step, metrics)
    bar.close()
    result = tracker.finish(step, algo="QMIX")
    env.close()
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
