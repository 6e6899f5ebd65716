"""PARL QuickStart: REINFORCE (``PolicyGradient``) on gymnasium's CartPole-v1.

``python examples/QuickStart/train.py`` (``--help`` lists every flag) trains until the greedy
policy's mean return over 10 evaluation episodes reaches 475, or for ``--max-episodes``. The
model and the agent are the two files beside this one (PARL's Getting Started has the same
three); the run's settings, metrics and checkpoints go to ``--logdir``. ``--backend torch``
trains the same classes on torch, ``--device cuda`` on a GPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import parl
from parl.utils import (
    Callback,
    EvalTracker,
    RolloutCollector,
    RunResult,
    calc_discount_sum_rewards,
    make_vector_env,
    parse_args,
    progress_bar,
    save_config,
    summary,
)

import numpy as np
from cartpole_agent import CartpoleAgent
from cartpole_model import CartpoleModel


@dataclasses.dataclass(frozen=True)
class Args:
    """REINFORCE on CartPole-v1 until the greedy policy's mean return reaches the target."""

    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend() (PARL_BACKEND, else the installed)."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    seed: int = 0
    """Seeds the framework, numpy and the environments."""
    max_episodes: int = 1000
    """Training-episode budget."""
    lr: float = 2e-3
    """Adam's learning rate."""
    hidden_size: int = 64
    """Width of the policy's hidden layer."""
    gamma: float = 0.99
    """Discount of the returns."""
    episodes_per_update: int = 1
    """Episodes whose steps form one gradient step."""
    eval_every: int = 2_000
    """Environment steps between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float = 475.0
    """Training stops at the first evaluation whose mean return reaches this."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/QuickStart_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def run_episode(
    collector: RolloutCollector, agent: CartpoleAgent
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Play one episode in the collector's single env with the stochastic policy.

    Returns:
        The episode's observations, actions and rewards.
    """
    obs_list, action_list, reward_list = [], [], []
    while True:
        step = collector.step(agent.sample(collector.obs))
        obs_list.append(step.obs[0])
        action_list.append(step.actions[0])
        reward_list.append(step.rewards[0])
        if step.dones[0]:
            return (
                np.asarray(obs_list, dtype=np.float32),
                np.asarray(action_list, dtype=np.int64),
                np.asarray(reward_list, dtype=np.float32),
            )


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train REINFORCE with ``args``; ``callbacks`` see every episode, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/QuickStart_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    collector = RolloutCollector(make_vector_env("CartPole-v1", 1), seed=args.seed)
    obs_dim = collector.envs.single_observation_space.shape[0]
    act_dim = int(collector.envs.single_action_space.n)
    model = CartpoleModel(obs_dim, act_dim, hidden_size=args.hidden_size, backend=backend)
    algorithm = parl.algorithms.get("PolicyGradient")(model, lr=args.lr)
    agent = CartpoleAgent(algorithm, seed=args.seed, device=args.device)
    tracker = EvalTracker(
        agent,
        make_vector_env("CartPole-v1", args.eval_episodes),
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        seed=args.seed,
        run_dir=run_dir,
        env_id="CartPole-v1",
        target=args.target,
        stop_at_target=True,
        callbacks=callbacks,
    )

    batch: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    bar = progress_bar(args.max_episodes, "REINFORCE CartPole-v1", unit="ep", disable=args.quiet)
    for _ in range(args.max_episodes):
        obs, actions, rewards = run_episode(collector, agent)
        collector.log_episodes()
        bar.update(1)
        bar.set_postfix(env_steps=collector.env_steps)
        batch.append((obs, actions, calc_discount_sum_rewards(rewards, args.gamma)))
        if len(batch) < args.episodes_per_update:
            continue
        returns = np.concatenate([item[2] for item in batch])
        # Normalised returns act as a baseline and keep the step size steady.
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)
        obs, actions = (np.concatenate([item[i] for item in batch]) for i in (0, 1))
        loss = agent.learn(obs, actions, returns)
        batch = []
        if tracker.update(collector.env_steps, {"losses/policy": loss}):
            break
    bar.close()
    result = tracker.finish(collector.env_steps)
    collector.envs.close()
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
