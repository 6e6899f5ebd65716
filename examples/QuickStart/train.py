"""PARL QuickStart: REINFORCE (``PolicyGradient``) on gymnasium's CartPole-v1.

Run ``python train.py`` (see README.md for the flags). Training stops as soon as the greedy
policy's mean return over 10 evaluation episodes reaches 475, or after ``--max-episodes``.
``train(...)`` is importable, so that benchmarks can call it and read the figures it returns.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import parl
from parl.utils import (
    RolloutCollector,
    calc_discount_sum_rewards,
    evaluate,
    logger,
    make_vector_env,
    progress_bar,
    summary,
)

from cartpole_agent import CartpoleAgent
from cartpole_model import CartpoleModel

TARGET_RETURN = 475.0
EVAL_EPISODES = 10


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


def train(
    seed: int = 0,
    max_episodes: int = 1000,
    eval_every: int = 20,
    lr: float = 2e-3,
    hidden_size: int = 64,
    gamma: float = 0.99,
    episodes_per_update: int = 1,
    logdir: str | os.PathLike[str] | None = None,
    save_path: str | os.PathLike[str] | None = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """Train REINFORCE on CartPole-v1 until the greedy policy reaches 475 or the budget ends.

    Args:
        seed: seeds paddle, numpy and the environments.
        max_episodes: training-episode budget.
        eval_every: evaluate (10 greedy episodes) after every this many training episodes.
        lr: Adam learning rate.
        hidden_size: width of the policy's hidden layer.
        gamma: discount of the returns.
        episodes_per_update: episodes whose steps form one gradient step.
        logdir: where metrics go (TensorBoard + CSV); ``train_log/quickstart-seed<seed>`` if None.
        save_path: checkpoint file; ``<logdir>/model.ckpt`` if None.
        quiet: hide the progress bar and the log lines.

    Returns:
        ``episodes``, ``env_steps``, ``wall_s``, ``reached`` (eval mean >= 475),
        ``final_eval_return``, ``evals`` (``(env_steps, mean return)`` of every evaluation)
        and ``save_path``.
    """
    start = time.perf_counter()
    parl.set_seed(seed)
    logdir = Path(logdir if logdir is not None else f"train_log/quickstart-seed{seed}")
    summary.set_logdir(logdir)
    save_path = Path(save_path) if save_path is not None else logdir / "model.ckpt"

    collector = RolloutCollector(make_vector_env("CartPole-v1", 1), seed=seed)
    eval_envs = make_vector_env("CartPole-v1", EVAL_EPISODES)
    eval_envs.reset(seed=seed + 10_000)  # later evaluations continue this seeded stream
    obs_dim = collector.envs.single_observation_space.shape[0]
    act_dim = int(collector.envs.single_action_space.n)

    model = CartpoleModel(obs_dim, act_dim, hidden_size=hidden_size)
    algorithm = parl.algorithms.get("PolicyGradient")(model, lr=lr)
    agent = CartpoleAgent(algorithm, seed=seed)

    episode, eval_return, reached = 0, 0.0, False
    evals: list[tuple[int, float]] = []
    batch: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    bar = progress_bar(max_episodes, f"REINFORCE seed {seed}", unit="ep", disable=quiet)
    while episode < max_episodes:
        obs, actions, rewards = run_episode(collector, agent)
        episode += 1
        collector.log_episodes()
        batch.append((obs, actions, calc_discount_sum_rewards(rewards, gamma)))
        if len(batch) == episodes_per_update:
            returns = np.concatenate([item[2] for item in batch])
            # Normalised returns act as a baseline and keep the step size steady.
            returns = (returns - returns.mean()) / (returns.std() + 1e-8)
            loss = agent.learn(
                np.concatenate([item[0] for item in batch]),
                np.concatenate([item[1] for item in batch]),
                returns,
            )
            summary.add_scalar("losses/policy", loss, collector.env_steps)
            batch = []
        bar.update(1)
        if episode % eval_every == 0 or episode == max_episodes:
            eval_return = evaluate(eval_envs, agent.predict, EVAL_EPISODES).mean_return
            summary.add_scalar("eval/episodic_return", eval_return, collector.env_steps)
            evals.append((collector.env_steps, float(eval_return)))
            bar.set_postfix(eval=f"{eval_return:.1f}", steps=collector.env_steps)
            if eval_return >= TARGET_RETURN:
                reached = True
                break
    bar.close()
    wall_s = time.perf_counter() - start

    agent.save(save_path)
    restored = CartpoleAgent(
        parl.algorithms.get("PolicyGradient")(CartpoleModel(obs_dim, act_dim, hidden_size))
    )
    restored.restore(save_path)
    probe, _ = eval_envs.reset()
    if not np.array_equal(restored.predict(probe), agent.predict(probe)):
        raise RuntimeError(f"the policy restored from {save_path} acts differently")
    summary.close()
    collector.envs.close()
    eval_envs.close()

    if not quiet:
        logger.info("checkpoint saved to %s and restored into a fresh agent", save_path)
    print(
        f"final evaluation: mean return {eval_return:.1f} over {EVAL_EPISODES} episodes "
        f"(episode {episode}, {wall_s:.1f} s)"
    )
    return {
        "episodes": episode,
        "env_steps": collector.env_steps,
        "wall_s": wall_s,
        "reached": reached,
        "final_eval_return": eval_return,
        "evals": evals,
        "save_path": str(save_path),
    }


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and train."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--max-episodes", type=int, default=1000, help="training episodes at most (default 1000)"
    )
    parser.add_argument(
        "--eval-every", type=int, default=20, help="episodes between evaluations (default 20)"
    )
    parser.add_argument("--logdir", default=None, help="metrics and checkpoint directory")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    args = parser.parse_args(argv)
    train(
        seed=args.seed,
        max_episodes=args.max_episodes,
        eval_every=args.eval_every,
        logdir=args.logdir,
        quiet=args.quiet,
    )


if __name__ == "__main__":
    main()
