"""Train MAPPO on a cooperative particle environment (simple_spread by default).

``python examples/MAPPO/train.py`` trains three agents on ``simple_spread`` with a policy shared
by the agents (``--no-shared-policy``: one per agent) and a value function on the env's global
state, with the MAPPO paper's MPE settings scaled to a small machine (``--help`` lists every
flag). Needs ``pip install "parl-algos-marl[mpe]"``.

Each update collects ``num_steps`` steps of ``num_envs`` particle envs with one batched policy
call per step; every agent-step is one PPO sample (:class:`parl_algos_marl.MAPPO`, which is
parl-algos-pg's PPO). Advantages come from ``parl.utils.compute_gae`` per agent, with the
25-step time limit bootstrapped from the value of the final observation
(``parl.utils.bootstrap_truncated``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import parl
from parl.env.multiagent_env import MAenv, ParallelEnvAdapter, TeamEnv
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


@dataclasses.dataclass(frozen=True)
class Args:
    """MAPPO (PPO with a centralised value function) on a particle scenario."""

    env_id: str = "simple_spread"
    """PARL's particle scenario with one observation size for all agents."""
    max_cycles: int = 25
    """Steps per episode."""
    seed: int = 0
    """Seeds paddle, numpy and the environments."""
    total_steps: int = 200_000
    """Environment steps over all environments."""
    num_envs: int = 8
    """Environments stepped together."""
    num_steps: int = 100
    """Rollout length per environment."""
    update_epochs: int = 10
    """Epochs over each rollout."""
    num_minibatches: int = 1
    """Minibatches per epoch."""
    shared_policy: bool = True
    """One policy for all agents (with their one-hot ids) instead of one each."""
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
    """The scenario with PARL's settings, as lists with one entry per agent."""
    return MAenv(args.env_id, max_cycles=args.max_cycles)


def reset(env: ParallelEnvAdapter, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A new episode's team observation ``[n, obs_dim]`` and global state."""
    obs_n, _ = env.reset(seed=seed)
    return np.stack(obs_n), env.state()


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every update, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/MAPPO_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    parl.set_seed(args.seed)

    envs = [make_env(args) for _ in range(args.num_envs)]
    first = envs[0]
    if len(set(first.obs_shape_n)) != 1 or len(set(first.act_shape_n)) != 1:
        raise ValueError(
            f"{args.env_id} gives its agents observation sizes {first.obs_shape_n} and actions "
            f"{first.act_shape_n}; this example needs one size of each (e.g. simple_spread)"
        )
    n, obs_dim, n_actions = first.n, first.obs_shape_n[0], first.act_shape_n[0]
    model = MAPPOModel(
        obs_dim, first.state_space.shape[0], n_actions, n, args.shared_policy, args.hidden_sizes
    )
    algorithm = parl.algorithms.get("MAPPO")(
        model,
        clip_param=args.clip_param,
        value_loss_coef=args.value_loss_coef,
        entropy_coef=args.entropy_coef,
        initial_lr=args.lr,
        max_grad_norm=args.max_grad_norm,
    )
    agent = MAPPOAgent(algorithm, n, seed=args.seed)
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

    starts = [reset(env, args.seed + i) for i, env in enumerate(envs)]
    obs = np.stack([o for o, _ in starts])
    state = np.stack([s for _, s in starts])
    episode_start = np.ones((args.num_envs, n), np.float32)
    episode_return = np.zeros(args.num_envs)
    steps_per_update = args.num_envs * args.num_steps
    num_updates = max(1, args.total_steps // steps_per_update)
    lr_schedule = LinearDecayScheduler(args.lr, num_updates)
    bar = progress_bar(num_updates * steps_per_update, f"MAPPO {args.env_id}", disable=args.quiet)
    shape = (args.num_steps, args.num_envs, n)
    for update in range(num_updates):
        lr = args.lr if update == 0 or not args.anneal_lr else lr_schedule.step()
        rows = np.zeros((*shape, agent.rows(obs, state).shape[-1]), np.float32)
        actions, values, logps = np.zeros(shape, np.int64), np.zeros(shape), np.zeros(shape)
        rewards, dones, terms, truncs, final_values = (np.zeros(shape) for _ in range(5))
        returns_done: list[float] = []
        for t in range(args.num_steps):
            rows[t], dones[t] = agent.rows(obs, state), episode_start
            values[t], actions[t], logps[t] = agent.sample(obs, state)
            for e, env in enumerate(envs):
                obs_n, reward_n, terminated_n, truncated_n, _ = env.step(list(actions[t, e]))
                rewards[t, e], terms[t, e], truncs[t, e] = reward_n, terminated_n, truncated_n
                episode_return[e] += sum(reward_n)
                obs[e], state[e] = np.stack(obs_n), env.state()
                ended = all(a or b for a, b in zip(terminated_n, truncated_n, strict=True))
                episode_start[e] = float(ended)
                if ended:
                    final_values[t, e] = agent.value(obs[e], state[e])
                    obs[e], state[e] = reset(env)
                    returns_done.append(float(episode_return[e]))
                    episode_return[e] = 0.0
        flat = (args.num_steps, args.num_envs * n)
        advantages, returns = compute_gae(
            bootstrap_truncated(rewards, terms, truncs, final_values, args.gamma).reshape(flat),
            values.reshape(flat),
            dones.reshape(flat),
            agent.value(obs, state).reshape(-1),
            episode_start.reshape(-1),
            args.gamma,
            args.gae_lambda,
        )
        stats = agent.learn(
            rows.reshape(-1, rows.shape[-1]),
            actions.reshape(-1),
            values.reshape(-1),
            returns.reshape(-1),
            logps.reshape(-1),
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
        if returns_done:
            metrics["charts/episodic_return"] = float(np.mean(returns_done))
        if tracker.update((update + 1) * steps_per_update, metrics):
            break
    bar.close()
    result = tracker.finish((update + 1) * steps_per_update, algo="MAPPO")
    for env in envs:
        env.close()
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
