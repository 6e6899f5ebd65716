"""Train MAPPO on a cooperative particle environment (simple_spread by default).

``python examples/MAPPO/train.py`` trains three agents on ``simple_spread`` with a policy shared
by the agents (``--no-shared-policy``: one per agent) and a value function on the env's global
state, with the MAPPO paper's MPE settings scaled to a small machine (``--help`` lists every
flag). ``--no-centralised-critic`` gives each agent's critic only what its actor sees: the
independent learner IPPO. Needs ``pip install "parl-algos-marl[mpe]"``.

Each update collects ``num_steps`` steps of ``num_envs`` particle envs with one batched policy
call per step; every agent-step is one PPO sample (:class:`parl_algos_marl.MAPPO`, which is
parl-algos-pg's PPO). Advantages come from ``parl.utils.compute_gae`` per agent, with the
25-step time limit bootstrapped from the value of the final observation
(``parl.utils.bootstrap_truncated``).

``--num-actors 2`` rolls out on two ``@parl.remote_class`` actors of an embedded xparl cluster
that starts and stops with the script, each stepping half of the envs
(:class:`parl_algos_marl.rollout.Rollouts`); ``--address HOST:PORT`` uses a cluster started with
``xparl start``, ``--address ray`` a local Ray. The actors get the weights once per update and
send back numpy arrays; the learner is the same either way.

``--backend torch`` trains the same classes on torch, ``--device cuda`` on a GPU (the learner;
rollout actors act on the CPU, on the learner's framework).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

import parl
from parl.env.multiagent_env import ParallelEnvAdapter, ParticleEnv, TeamEnv
from parl.utils import (
    Callback,
    EvalTracker,
    LinearDecayScheduler,
    RunResult,
    bootstrap_truncated,
    compute_gae,
    make_vector_env,
    parse_args,
    progress_bar,
    save_config,
    summary,
)

import gymnasium as gym
import numpy as np

from parl_algos_marl import MAPPOAgent, MAPPOModel
from parl_algos_marl.rollout import Rollouts


@dataclasses.dataclass(frozen=True)
class Args:
    """MAPPO (PPO with a centralised value function) on a particle scenario."""

    env_id: str = "simple_spread"
    """A cooperative particle scenario with discrete actions (simple_spread,
    simple_speaker_listener, ...); agents that see or do less are padded and masked."""
    max_cycles: int = 25
    """Steps per episode."""
    seed: int = 0
    """Seeds the framework, numpy and the environments."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend() (PARL_BACKEND, else the installed)."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    total_steps: int = 200_000
    """Environment steps over all environments."""
    num_envs: int = 8
    """Environments stepped together."""
    num_steps: int = 100
    """Rollout length per environment."""
    num_actors: int = 0
    """Remote rollout actors, each stepping num_envs / num_actors envs; 0: roll out here."""
    address: str | None = None
    """Where the actors run: an xparl HOST:PORT, "ray" or "ray://HOST:PORT"; None: an embedded
    xparl cluster."""
    update_epochs: int = 10
    """Epochs over each rollout."""
    num_minibatches: int = 1
    """Minibatches per epoch."""
    shared_policy: bool = True
    """One policy for all agents (with their one-hot ids) instead of one each."""
    centralised_critic: bool = True
    """The critic sees the global state (MAPPO); False: only the agent's own observation and
    id, which makes the agents independent learners (IPPO)."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the hidden layers of the actor(s) and the critic."""
    lr: float = 7e-4
    """Adam's learning rate."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over the run."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE's lambda."""
    clip_param: float = 0.2
    """Clip range of the probability ratio."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus."""
    value_loss_coef: float = 1.0
    """Weight of the value loss."""
    max_grad_norm: float = 10.0
    """Global gradient-norm clip."""
    eval_every: int = 10_000
    """Environment steps between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = None
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/MAPPO_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def make_env(args: Args) -> ParallelEnvAdapter:
    """The scenario with PARL's settings, as lists with one entry per agent; observations
    zero-padded to the longest, so that one policy sees every agent."""
    return ParticleEnv(args.env_id, max_cycles=args.max_cycles, pad_observations=True)


def make_agent(args: Args, backend: str, device: Any = None) -> MAPPOAgent:
    """The shared or per-agent policies and the centralised critic, in a MAPPO agent on
    ``backend`` (and ``device``: torch only)."""
    env = make_env(args)
    n, obs_dim, n_actions = env.n, env.obs_shape_n[0], env.act_shape_n
    state_dim = env.state_space.shape[0]
    model = MAPPOModel(
        obs_dim,
        state_dim,
        n_actions,
        n,
        args.shared_policy,
        args.hidden_sizes,
        args.centralised_critic,
        backend=backend,
    )
    env.close()
    algorithm = parl.algorithms.get("MAPPO", backend=backend)(
        model,
        clip_param=args.clip_param,
        value_loss_coef=args.value_loss_coef,
        entropy_coef=args.entropy_coef,
        initial_lr=args.lr,
        max_grad_norm=args.max_grad_norm,
    )
    return MAPPOAgent(algorithm, n, seed=args.seed, device=device)


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every update, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/MAPPO_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    agent = make_agent(args, backend, args.device)
    if args.num_actors:
        parl.connect(args.address, cpu_num=None if args.address else args.num_actors)
    rollouts = Rollouts(
        partial(make_env, args),
        partial(make_agent, args),
        args.num_envs,
        args.num_actors,
        seed=args.seed,
        backend=backend,
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
        policy=lambda obs_n: tuple(agent.predict(np.stack(obs_n, axis=1)).T),
    )

    steps_per_update = args.num_envs * args.num_steps
    num_updates = max(1, args.total_steps // steps_per_update)
    lr_schedule = LinearDecayScheduler(args.lr, num_updates)
    bar = progress_bar(
        num_updates * steps_per_update, f"MAPPO {args.env_id}", unit="step", disable=args.quiet
    )
    for update in range(num_updates):
        lr = args.lr if update == 0 or not args.anneal_lr else lr_schedule.step()
        # [num_steps, num_envs, n_agents] arrays from every env, stepped here or by the actors.
        batch = rollouts.collect(agent.get_weights(), args.num_steps)
        num_steps, num_envs, n = batch.rewards.shape
        flat = (num_steps, num_envs * n)
        rewards = bootstrap_truncated(
            batch.rewards, batch.terminated, batch.truncated, batch.final_values, args.gamma
        )
        advantages, returns = compute_gae(
            rewards.reshape(flat),
            batch.values.reshape(flat),
            batch.episode_start.reshape(flat),
            batch.next_values.reshape(-1),
            batch.next_episode_start.reshape(-1),
            args.gamma,
            args.gae_lambda,
        )
        stats = agent.learn(
            batch.rows.reshape(-1, batch.rows.shape[-1]),
            batch.actions.reshape(-1),
            batch.values.reshape(-1),
            returns.reshape(-1),
            batch.log_probs.reshape(-1),
            advantages.reshape(-1),
            args.update_epochs,
            args.num_minibatches,
            lr=lr,
        )
        bar.update(steps_per_update)
        metrics = {
            "losses/value_loss": stats.value_loss,
            "losses/policy_loss": stats.action_loss,
            "losses/entropy": stats.entropy,
            "losses/approx_kl": stats.approx_kl,
        }
        if batch.episode_returns:
            metrics["charts/episodic_return"] = float(np.mean(batch.episode_returns))
        if tracker.update((update + 1) * steps_per_update, metrics):
            break
    bar.close()
    result = tracker.finish((update + 1) * steps_per_update, algo="MAPPO")
    rollouts.close()
    if args.num_actors:
        parl.remote.disconnect()
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
