"""PPO on a gymnasium vector environment: CartPole-v1 (discrete) or Pendulum-v1 (continuous).

Run ``python train.py --env CartPole-v1`` (see README.md). The rollout collects ``num_steps``
steps of ``num_envs`` environments with one batched policy call per step; advantages come from
``parl.utils.compute_gae``, with time-limit truncations bootstrapped from the value of the
final observation. ``train(...)`` is importable so that benchmarks can call it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

import parl
from parl.utils import LinearDecayScheduler, bootstrap_truncated, compute_gae, logger, summary

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


def _obs_normalizers(envs: gym.vector.SyncVectorEnv) -> list[Any]:
    """The ``NormalizeObservation`` wrapper of each sub-environment (empty if none)."""
    found = []
    for env in envs.envs:
        while isinstance(env, gym.Wrapper):
            if isinstance(env, gym.wrappers.NormalizeObservation):
                found.append(env)
                break
            env = env.env
    return found


def evaluate(
    agent: PPOAgent, env_id: str, settings: PPOSettings, train_envs: Any, seed: int
) -> float:
    """Mean return of the greedy policy over 10 episodes, played as one batch.

    Every evaluation of a run uses the same ``seed``, so the same 10 start states: the curve
    compares policies, not draws of start states (Pendulum's returns depend on them a lot).

    With observation normalisation, the evaluation environments use the first training
    environment's running statistics, frozen.
    """
    envs = gym.vector.SyncVectorEnv([lambda: make_env(env_id, settings)] * EVAL_EPISODES)
    source = _obs_normalizers(train_envs)
    for target in _obs_normalizers(envs):
        target.update_running_mean = False
        target.obs_rms = source[0].obs_rms
    obs, _ = envs.reset(seed=seed)
    returns = np.zeros(EVAL_EPISODES)
    running = np.ones(EVAL_EPISODES, dtype=bool)
    while running.any():
        action = agent.predict(obs)
        obs, _, terminated, truncated, infos = envs.step(action)
        finished = running & (terminated | truncated)
        if finished.any():
            returns[finished] = infos["episode"]["r"][finished]
            running &= ~finished
    envs.close()
    return float(returns.mean())


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
    start = time.perf_counter()
    parl.set_seed(seed)
    summary.set_logdir(Path(logdir or f"train_log/ppo-{env_id}-seed{seed}"))

    envs = gym.vector.SyncVectorEnv(
        [lambda: make_env(env_id, settings)] * settings.num_envs,
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
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

    n, t_len = settings.num_envs, settings.num_steps
    batch_size = n * t_len
    num_updates = max(1, settings.total_steps // batch_size)
    lr_schedule = LinearDecayScheduler(settings.lr, num_updates)
    obs_buf = np.zeros((t_len, n, *envs.single_observation_space.shape), dtype=np.float32)
    act_buf = np.zeros((t_len, n, *envs.single_action_space.shape), dtype=action_dtype(continuous))
    logp_buf = np.zeros((t_len, n), dtype=np.float32)
    val_buf = np.zeros((t_len, n), dtype=np.float32)
    rew_buf = np.zeros((t_len, n), dtype=np.float32)
    done_buf = np.zeros((t_len, n), dtype=np.float32)
    term_buf = np.zeros((t_len, n), dtype=np.float32)
    trunc_buf = np.zeros((t_len, n), dtype=np.float32)
    final_val_buf = np.zeros((t_len, n), dtype=np.float32)

    obs, _ = envs.reset(seed=seed)
    next_done = np.zeros(n, dtype=np.float32)
    step, next_eval = 0, settings.eval_every
    evals: list[tuple[int, float]] = []
    first_target_step: int | None = None
    act_low = envs.single_action_space.low if continuous else None
    act_high = envs.single_action_space.high if continuous else None
    bar = tqdm(total=num_updates * batch_size, disable=quiet, desc=f"PPO {env_id} seed {seed}")
    for update in range(num_updates):
        lr = settings.lr if update == 0 or not settings.anneal_lr else lr_schedule.step()
        final_val_buf[:] = 0.0
        for t in range(t_len):
            obs_buf[t] = obs
            done_buf[t] = next_done
            value, action, logp = agent.sample(obs)
            val_buf[t], act_buf[t], logp_buf[t] = value, action, logp
            env_action = np.clip(action, act_low, act_high) if continuous else action
            obs, reward, terminated, truncated, infos = envs.step(env_action)
            rew_buf[t], term_buf[t], trunc_buf[t] = reward, terminated, truncated
            next_done = (terminated | truncated).astype(np.float32)
            cut = truncated & ~terminated
            if cut.any():
                final_obs = np.stack(infos["final_obs"][cut]).astype(np.float32)
                final_val_buf[t, cut] = agent.value(final_obs)
            if "final_info" in infos:
                ended = infos["final_info"]["_episode"]
                for episodic_return in infos["final_info"]["episode"]["r"][ended]:
                    summary.add_scalar("charts/episodic_return", float(episodic_return), step)
            step += n
        bar.update(batch_size)

        last_value = agent.value(obs)
        rewards = bootstrap_truncated(rew_buf, term_buf, trunc_buf, final_val_buf, settings.gamma)
        adv, returns = compute_gae(
            rewards, val_buf, done_buf, last_value, next_done, settings.gamma, settings.gae_lambda
        )
        value_loss, policy_loss, entropy = agent.learn(
            obs_buf.reshape(batch_size, *obs_buf.shape[2:]),
            act_buf.reshape(batch_size, *act_buf.shape[2:]),
            val_buf.reshape(-1),
            returns.reshape(-1),
            logp_buf.reshape(-1),
            adv.reshape(-1),
            settings.update_epochs,
            settings.num_minibatches,
            lr,
        )
        sps = step / (time.perf_counter() - start)
        summary.add_scalars(
            {
                "losses/value_loss": value_loss,
                "losses/policy_loss": policy_loss,
                "losses/entropy": entropy,
                "charts/learning_rate": lr,
                "charts/SPS": sps,
            },
            step,
        )
        if step >= next_eval or update == num_updates - 1:
            next_eval += settings.eval_every
            eval_return = evaluate(agent, env_id, settings, envs, seed + 10_000)
            evals.append((step, eval_return))
            summary.add_scalar("eval/episodic_return", eval_return, step)
            bar.set_postfix(eval=f"{eval_return:.1f}", sps=f"{sps:.0f}")
            if (
                first_target_step is None
                and settings.target is not None
                and eval_return >= settings.target
            ):
                first_target_step = step
    bar.close()
    envs.close()
    summary.close()
    wall_s = time.perf_counter() - start
    final = evals[-1][1]
    if not quiet:
        logger.info("evaluations (step, mean return): %s", evals)
    reached = "not reached" if first_target_step is None else f"reached at {first_target_step}"
    print(
        f"final evaluation: mean return {final:.1f} over {EVAL_EPISODES} episodes "
        f"({step} steps, {wall_s:.1f} s, {step / wall_s:.0f} steps/s, target "
        f"{settings.target} {reached})"
    )
    return {
        "env_id": env_id,
        "seed": seed,
        "env_steps": step,
        "wall_s": wall_s,
        "sps": step / wall_s,
        "final_eval_return": final,
        "target": settings.target,
        "first_target_step": first_target_step,
        "evals": evals,
        "settings": asdict(settings),
    }


def action_dtype(continuous: bool) -> type:
    """The numpy dtype of stored actions: float32 for Box, int64 for Discrete."""
    return np.float32 if continuous else np.int64


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
