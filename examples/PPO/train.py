"""PPO on a gymnasium vector environment: CartPole-v1 (discrete) or Pendulum-v1 (continuous).

Run ``python train.py --env CartPole-v1`` (see README.md). ``parl.utils.RolloutCollector``
collects ``num_steps`` steps of ``num_envs`` environments with one batched policy call per step;
advantages come from ``parl.utils.compute_gae``, with time-limit truncations bootstrapped from
the value of the final observation (one batched value call per rollout). ``train(...)`` is
importable so that benchmarks can call it.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import parl
from parl.utils import (
    LinearDecayScheduler,
    RolloutCollector,
    compute_gae,
    evaluate,
    logger,
    make_vector_env,
    progress_bar,
    summary,
)

from agent import PPOAgent
from model import ContinuousPPOModel, DiscretePPOModel

EVAL_EPISODES = 10


@dataclass(frozen=True)
class PPOSettings:
    """Hyperparameters of a PPO run (CleanRL's names).

    ``num_steps`` is the rollout length per environment, so one update sees
    ``num_envs * num_steps`` samples; ``clip_value_loss`` is PPO's ``use_clipped_value_loss``;
    ``normalize_obs`` / ``normalize_reward`` add gymnasium's running normalisation wrappers;
    evaluation runs every ``eval_every`` env steps, and ``target`` is the evaluation return
    whose first crossing is reported.
    """

    total_steps: int = 50_000
    num_envs: int = 4
    num_steps: int = 128
    num_minibatches: int = 4
    update_epochs: int = 4
    lr: float = 2.5e-4
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_param: float = 0.2
    entropy_coef: float = 0.01
    value_loss_coef: float = 0.5
    max_grad_norm: float = 0.5
    clip_value_loss: bool = True
    hidden_size: int = 64
    log_std_init: float = 0.0
    normalize_obs: bool = False
    normalize_reward: bool = False
    eval_every: int = 5_000
    target: float | None = None


DEFAULTS: dict[str, PPOSettings] = {
    # rl-baselines3-zoo's CartPole settings: short rollouts, many epochs, no value clipping.
    "CartPole-v1": PPOSettings(
        total_steps=50_000,
        num_envs=8,
        num_steps=32,
        num_minibatches=1,
        update_epochs=20,
        lr=1e-3,
        gamma=0.98,
        gae_lambda=0.8,
        clip_param=0.2,
        entropy_coef=0.0,
        clip_value_loss=False,
        eval_every=2_048,
        target=475.0,
    ),
    "Pendulum-v1": PPOSettings(
        total_steps=200_000,
        num_envs=4,
        num_steps=1024,
        num_minibatches=32,
        update_epochs=10,
        lr=1e-3,
        gamma=0.9,
        gae_lambda=0.95,
        clip_param=0.2,
        entropy_coef=0.0,
        clip_value_loss=False,
        normalize_reward=True,
        eval_every=8_192,
        target=-250.0,
    ),
}


def make_env(env_id: str, settings: PPOSettings) -> gym.Env:
    """One environment, recording raw episode returns before any normalisation."""
    env = gym.wrappers.RecordEpisodeStatistics(gym.make(env_id))
    if isinstance(env.action_space, gym.spaces.Box):
        env = gym.wrappers.ClipAction(env)
    if settings.normalize_obs:
        env = gym.wrappers.NormalizeObservation(env)
        env = gym.wrappers.TransformObservation(
            env, lambda obs: np.clip(obs, -10, 10), env.observation_space
        )
    if settings.normalize_reward:
        env = gym.wrappers.NormalizeReward(env, gamma=settings.gamma)
        env = gym.wrappers.TransformReward(env, lambda reward: float(np.clip(reward, -10, 10)))
    return env


def share_obs_statistics(train_envs: gym.vector.SyncVectorEnv, eval_envs: Any) -> None:
    """Make ``eval_envs`` normalise observations with the first training env's statistics, frozen.

    The statistics object is shared, so evaluations always use the latest training statistics.
    """

    def normalizers(envs: Any) -> list[gym.wrappers.NormalizeObservation]:
        found = []
        for env in envs.envs:
            while isinstance(env, gym.Wrapper):
                if isinstance(env, gym.wrappers.NormalizeObservation):
                    found.append(env)
                    break
                env = env.env
        return found

    source = normalizers(train_envs)
    for target in normalizers(eval_envs):
        target.update_running_mean = False
        target.obs_rms = source[0].obs_rms


def train(
    env_id: str = "CartPole-v1",
    seed: int = 0,
    settings: PPOSettings | None = None,
    logdir: str | os.PathLike[str] | None = None,
    quiet: bool = False,
    **overrides: Any,
) -> dict[str, Any]:
    """Train PPO on ``env_id`` and return the figures of the run.

    Args:
        env_id: a gymnasium id with a Discrete or a Box action space.
        seed: seeds paddle, numpy and the environments.
        settings: hyperparameters; ``DEFAULTS[env_id]`` (or ``PPOSettings()``) if None.
        logdir: metrics directory; ``train_log/ppo-<env>-seed<seed>`` if None.
        quiet: hide the progress bar and the log lines.
        **overrides: replace single settings, e.g. ``total_steps=10_000``.

    Returns:
        ``env_steps``, ``wall_s``, ``sps``, ``final_eval_return`` (10 greedy episodes),
        ``target``, ``first_target_step`` (env steps at the first evaluation that reached the
        target, or None) and ``evals`` (a list of ``(step, return)``).
    """
    settings = replace(settings or DEFAULTS.get(env_id, PPOSettings()), **overrides)
    parl.set_seed(seed)
    summary.set_logdir(Path(logdir or f"train_log/ppo-{env_id}-seed{seed}"))

    envs = make_vector_env(lambda: make_env(env_id, settings), settings.num_envs)
    eval_envs = make_vector_env(lambda: make_env(env_id, settings), EVAL_EPISODES)
    share_obs_statistics(envs, eval_envs)
    continuous = isinstance(envs.single_action_space, gym.spaces.Box)
    obs_dim = int(np.prod(envs.single_observation_space.shape))
    if continuous:
        act_dim = int(np.prod(envs.single_action_space.shape))
        model: parl.Model = ContinuousPPOModel(
            obs_dim, act_dim, settings.hidden_size, settings.log_std_init
        )
    else:
        model = DiscretePPOModel(obs_dim, int(envs.single_action_space.n), settings.hidden_size)
    algorithm = parl.algorithms.get("PPO")(
        model,
        clip_param=settings.clip_param,
        value_loss_coef=settings.value_loss_coef,
        entropy_coef=settings.entropy_coef,
        initial_lr=settings.lr,
        max_grad_norm=settings.max_grad_norm,
        use_clipped_value_loss=settings.clip_value_loss,
        continuous_action=continuous,
    )
    agent = PPOAgent(algorithm, seed=seed)

    def act(obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        value, action, logprob = agent.sample(obs)
        return action, {"value": value, "logprob": logprob}

    batch_size = settings.num_envs * settings.num_steps
    num_updates = max(1, settings.total_steps // batch_size)
    lr_schedule = LinearDecayScheduler(settings.lr, num_updates)
    collector = RolloutCollector(envs, seed=seed)
    next_eval = settings.eval_every
    evals: list[tuple[int, float]] = []
    first_target_step: int | None = None
    bar = progress_bar(
        num_updates * batch_size, f"PPO {env_id} seed {seed}", unit="step", disable=quiet
    )
    for update in range(num_updates):
        lr = settings.lr if update == 0 or not settings.anneal_lr else lr_schedule.step()
        rollout = collector.rollout(act, settings.num_steps)
        values, logprobs = rollout.extras["value"], rollout.extras["logprob"]
        advantages, returns = compute_gae(
            rollout.bootstrapped_rewards(agent.value, settings.gamma),
            values,
            rollout.dones,
            agent.value(rollout.next_obs),
            rollout.next_dones,
            settings.gamma,
            settings.gae_lambda,
        )
        value_loss, policy_loss, entropy = agent.learn(
            rollout.flatten(rollout.obs),
            rollout.flatten(rollout.actions),
            values.reshape(-1),
            returns.reshape(-1),
            logprobs.reshape(-1),
            advantages.reshape(-1),
            settings.update_epochs,
            settings.num_minibatches,
            lr,
        )
        step = collector.env_steps
        collector.log_episodes()
        summary.add_scalars(
            {
                "losses/value_loss": value_loss,
                "losses/policy_loss": policy_loss,
                "losses/entropy": entropy,
                "charts/learning_rate": lr,
                "charts/SPS": collector.sps,
            },
            step,
        )
        bar.update(batch_size)
        if step >= next_eval or update == num_updates - 1:
            next_eval += settings.eval_every
            eval_return = evaluate(eval_envs, agent.predict, EVAL_EPISODES, seed=seed + 10_000)
            evals.append((step, eval_return.mean_return))
            summary.add_scalar("eval/episodic_return", eval_return.mean_return, step)
            bar.set_postfix(eval=f"{eval_return.mean_return:.1f}", sps=f"{collector.sps:.0f}")
            if first_target_step is None and (
                settings.target is not None and eval_return.mean_return >= settings.target
            ):
                first_target_step = step
    bar.close()
    sps, step = collector.sps, collector.env_steps
    envs.close()
    eval_envs.close()
    summary.close()
    wall_s = step / sps
    final = evals[-1][1]
    if not quiet:
        logger.info("evaluations (step, mean return): %s", evals)
    reached = "not reached" if first_target_step is None else f"reached at {first_target_step}"
    print(
        f"final evaluation: mean return {final:.1f} over {EVAL_EPISODES} episodes "
        f"({step} steps, {wall_s:.1f} s, {sps:.0f} steps/s, target "
        f"{settings.target} {reached})"
    )
    return {
        "env_id": env_id,
        "seed": seed,
        "env_steps": step,
        "wall_s": wall_s,
        "sps": sps,
        "final_eval_return": final,
        "target": settings.target,
        "first_target_step": first_target_step,
        "evals": evals,
        "settings": asdict(settings),
    }


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and train."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1", help="gymnasium id (default CartPole-v1)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--total-steps", type=int, default=None, help="environment steps")
    parser.add_argument("--num-envs", type=int, default=None, help="parallel environments")
    parser.add_argument("--logdir", default=None, help="metrics directory")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    args = parser.parse_args(argv)
    overrides = {
        key: value
        for key, value in {"total_steps": args.total_steps, "num_envs": args.num_envs}.items()
        if value is not None
    }
    train(args.env, args.seed, logdir=args.logdir, quiet=args.quiet, **overrides)


if __name__ == "__main__":
    main()
