"""Train SAC, TD3 or DDPG on a continuous-control task (Pendulum-v1 by default).

``python examples/SAC/train.py`` trains SAC with automatic entropy tuning on Pendulum-v1;
``--env HalfCheetah-v5`` (``pip install "parl-algos-ac[mujoco]"``) a MuJoCo task; ``--algo TD3``
or ``--algo DDPG`` the deterministic ones (``examples/TD3/train.py`` and
``examples/DDPG/train.py`` are this script with that default). A benchmark imports this file
and calls :func:`train`.

The agent acts in ``[-1, 1]``; ``parl.env.ActionMappingWrapper`` maps actions onto the
environment's bounds. Transitions are stored with ``terminal = terminated``, so episodes cut by
the time limit still bootstrap. Losses are read back from the device only when they are logged.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import parl
from parl.env import ActionMappingWrapper
from parl.utils import (
    ReplayMemory,
    RolloutCollector,
    evaluate,
    logger,
    make_vector_env,
    progress_bar,
    summary,
)

import gymnasium as gym
import numpy as np

from parl_algos_ac import ContinuousAgent, DeterministicActorCritic, GaussianActorCritic

Algo = Literal["SAC", "TD3", "DDPG"]

#: Per-algorithm settings for Pendulum-v1 (RL Baselines3 Zoo's, with an earlier start).
DEFAULTS: dict[str, dict[str, Any]] = {
    "SAC": {"lr": 1e-3, "gamma": 0.99},
    "TD3": {"lr": 1e-3, "gamma": 0.98},
    "DDPG": {"lr": 1e-3, "gamma": 0.98},
}


def make_env(env_id: str) -> gym.Env:
    """One environment acting in ``[-1, 1]``, recording raw episode returns."""
    return gym.wrappers.RecordEpisodeStatistics(ActionMappingWrapper(gym.make(env_id)))


def build_agent(
    algo: Algo, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int], lr: float, gamma: float,
    tau: float, expl_noise: float, seed: int,
) -> ContinuousAgent:  # fmt: skip
    """The model and the algorithm, looked up by name in the registry."""
    options: dict[str, Any] = {"gamma": gamma, "tau": tau, "actor_lr": lr, "critic_lr": lr}
    if algo == "SAC":
        model: parl.Model = GaussianActorCritic(obs_dim, act_dim, hidden_sizes, num_critics=2)
        options["alpha"] = "auto"
    else:
        critics = 2 if algo == "TD3" else 1
        model = DeterministicActorCritic(obs_dim, act_dim, hidden_sizes, num_critics=critics)
    algorithm = parl.algorithms.get(algo)(model, **options)
    return ContinuousAgent(algorithm, expl_noise=expl_noise, seed=seed)


def train(
    *,
    env_id: str = "Pendulum-v1",
    algo: Algo = "SAC",
    total_steps: int = 10_000,
    seed: int = 0,
    hidden_sizes: Sequence[int] = (256, 256),
    lr: float | None = None,
    gamma: float | None = None,
    tau: float = 0.005,
    expl_noise: float = 0.1,
    buffer_size: int = 1_000_000,
    batch_size: int = 256,
    learning_starts: int = 1_000,
    eval_interval: int = 1_000,
    eval_episodes: int = 10,
    target_return: float = -200.0,
    logdir: str | Path | None = None,
    save_path: str | Path | None = None,
    best_save_path: str | Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Train an agent and return its figures.

    Args:
        env_id: a gymnasium id with flat Box observations and a bounded Box action space.
        algo: ``"SAC"``, ``"TD3"`` or ``"DDPG"`` (registry names).
        total_steps: environment steps; one gradient step per step after ``learning_starts``.
        seed: seeds paddle, numpy, the environment, the replay memory and exploration.
        hidden_sizes: widths of the hidden layers of the actor and of each critic.
        lr: learning rate of actor and critic; None: ``DEFAULTS[algo]``.
        gamma: discount factor; None: ``DEFAULTS[algo]``.
        tau: soft target update rate.
        expl_noise: Gaussian exploration noise of TD3 and DDPG.
        buffer_size: replay memory capacity.
        batch_size: transitions per gradient step.
        learning_starts: steps of uniformly random actions before learning starts.
        eval_interval: environment steps between greedy evaluations.
        eval_episodes: episodes per evaluation (run as that many parallel envs).
        target_return: the eval return whose first reach is reported as ``steps_to_target``.
        logdir: where TensorBoard/CSV scalars go; None logs no metrics.
        save_path: the final policy, written with ``agent.save``; None saves nothing.
        best_save_path: rewritten whenever an evaluation beats the previous best.
        progress: show a tqdm progress bar.

    Returns:
        ``env_steps``, ``wall_s``, ``sps``, ``final_eval_return``, ``best_eval_return``,
        ``best_eval_steps``, ``steps_to_target`` (or None) and ``evals`` (``(step, return)``).
    """
    lr = DEFAULTS[algo]["lr"] if lr is None else lr
    gamma = DEFAULTS[algo]["gamma"] if gamma is None else gamma
    parl.set_seed(seed)
    envs = make_vector_env(lambda: make_env(env_id), 1)
    eval_envs = make_vector_env(lambda: make_env(env_id), eval_episodes)
    obs_space, act_space = envs.single_observation_space, envs.single_action_space
    if not isinstance(act_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise ValueError(
            f"{env_id} has observation space {obs_space} and action space {act_space}; this "
            "example needs flat Box observations and Box actions"
        )
    obs_dim, act_dim = obs_space.shape[0], act_space.shape[0]
    agent = build_agent(algo, obs_dim, act_dim, hidden_sizes, lr, gamma, tau, expl_noise, seed)
    rpm = ReplayMemory(buffer_size, obs_dim=obs_dim, act_dim=act_dim, seed=seed)
    random_actions = np.random.default_rng(seed)
    if logdir is not None:
        summary.set_logdir(logdir)

    collector = RolloutCollector(envs, seed=seed)
    losses: Any = None
    next_log, next_eval = 1_000, eval_interval
    evals: list[tuple[int, float]] = []
    steps_to_target: int | None = None
    best_return = float("-inf")
    bar = progress_bar(total_steps, f"{algo} {env_id}", unit="step", disable=not progress)
    while collector.env_steps < total_steps:
        if collector.env_steps < learning_starts:
            actions = random_actions.uniform(-1, 1, (1, act_dim)).astype(np.float32)
        else:
            actions = agent.sample(collector.obs)
        step = collector.step(actions)
        rpm.append_batch(step.obs, step.actions, step.rewards, step.next_obs, step.terminations)
        if collector.env_steps >= learning_starts:
            losses = agent.learn(*rpm.sample_batch(batch_size))
        bar.update(1)
        env_steps = collector.env_steps

        if env_steps >= next_log:
            next_log += 1_000
            if logdir is not None:
                collector.log_episodes()
                summary.add_scalar("charts/SPS", collector.sps, env_steps)
                if losses is not None:
                    summary.add_scalars(loss_scalars(agent, losses), env_steps)
        if env_steps >= next_eval or env_steps >= total_steps:
            next_eval += eval_interval
            mean_return = evaluate(eval_envs, agent.predict, eval_episodes, seed=seed + 10_000)
            mean_return = mean_return.mean_return
            if mean_return > best_return:
                best_return = mean_return
                if best_save_path is not None:
                    agent.save(best_save_path)
            evals.append((env_steps, mean_return))
            if logdir is not None:
                summary.add_scalar("eval/episodic_return", mean_return, env_steps)
            bar.set_postfix(eval_return=f"{mean_return:.1f}")
            if steps_to_target is None and mean_return >= target_return:
                steps_to_target = env_steps
    bar.close()
    sps = collector.sps
    envs.close()
    eval_envs.close()
    if save_path is not None:
        agent.save(save_path)
    if logdir is not None:
        summary.close()
    best_steps, best_value = max(evals, key=lambda item: (item[1], -item[0]))
    return {
        "env_id": env_id,
        "algo": algo,
        "seed": seed,
        "env_steps": collector.env_steps,
        "wall_s": collector.env_steps / sps,
        "sps": sps,
        "final_eval_return": evals[-1][1],
        "best_eval_return": best_value,
        "best_eval_steps": best_steps,
        "steps_to_target": steps_to_target,
        "evals": evals,
    }


def loss_scalars(agent: ContinuousAgent, losses: Any) -> dict[str, float]:
    """The scalars to log from what ``learn`` returned (TD3 returns the critic loss only)."""
    if not isinstance(losses, tuple):
        return {"losses/critic_loss": float(losses)}
    scalars = {"losses/critic_loss": float(losses[0]), "losses/actor_loss": float(losses[1])}
    alpha_loss = getattr(agent.alg, "alpha_loss", None)
    if alpha_loss is not None:
        scalars |= {"losses/alpha": float(agent.alg.alpha), "losses/alpha_loss": float(alpha_loss)}
    return scalars


def main(argv: Sequence[str] | None = None, default_algo: Algo = "SAC") -> dict[str, Any]:
    """Parse the command line, train, print the final evaluation and save the agent."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=list(DEFAULTS), default=default_algo)
    parser.add_argument("--env", default="Pendulum-v1", help="gymnasium env id")
    parser.add_argument("--total-steps", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--eval-interval", type=int, default=1_000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--logdir", default=None, help="default: runs/<algo>_<env>_seed<seed>")
    parser.add_argument("--quiet", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    logdir = Path(args.logdir or f"runs/{args.algo}_{args.env}_seed{args.seed}")
    result = train(
        env_id=args.env,
        algo=args.algo,
        total_steps=args.total_steps,
        seed=args.seed,
        learning_starts=args.learning_starts,
        batch_size=args.batch_size,
        eval_interval=args.eval_interval,
        eval_episodes=args.eval_episodes,
        logdir=logdir,
        save_path=logdir / "model.ckpt",
        best_save_path=logdir / "best_model.ckpt",
        progress=not args.quiet,
    )
    logger.info(
        "final evaluation: mean greedy return %.1f over %d episodes after %d env steps "
        "(%.0f env steps/s); best %.1f at %d steps; checkpoints in %s",
        result["final_eval_return"],
        args.eval_episodes,
        result["env_steps"],
        result["sps"],
        result["best_eval_return"],
        result["best_eval_steps"],
        logdir,
    )
    return result


if __name__ == "__main__":
    main()
