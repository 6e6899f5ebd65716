"""PPO on a gymnasium vector environment: CartPole-v1 (discrete) or Pendulum-v1 (continuous).

``python examples/PPO/train.py`` trains on CartPole-v1 with rl-baselines3-zoo's settings;
``--config benchmarks/configs/PPO-Pendulum-v1.yaml`` uses the Pendulum benchmark's settings
(``--help`` lists every flag). ``parl.utils.RolloutCollector`` collects ``num_steps`` steps of
``num_envs`` environments with one batched policy call per step; advantages come from
``parl.utils.compute_gae``, with time-limit truncations bootstrapped from the value of the final
observation. The run's settings, metrics and checkpoints go to ``--logdir``.

``--backend torch`` trains the same classes on torch with the same settings, ``--device cuda``
on a GPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import parl
from parl.utils import (
    Callback,
    EvalTracker,
    LinearDecayScheduler,
    RolloutCollector,
    RunResult,
    compute_gae,
    make_vector_env,
    parse_args,
    progress_bar,
    save_config,
    summary,
)

import gymnasium as gym
import numpy as np

from parl_algos_pg import ContinuousPPOModel, DiscretePPOModel, PPOAgent


@dataclasses.dataclass(frozen=True)
class Args:
    """PPO (clipped surrogate) on a gymnasium env with a Discrete or a Box action space."""

    env_id: str = "CartPole-v1"
    """Gymnasium id."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend() (PARL_BACKEND, else the installed)."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    compile: bool = False
    """Capture each update with torch.compile (CUDA graphs on a GPU); paddle runs eagerly."""
    seed: int = 0
    """Seeds the framework, numpy and the environments."""
    total_steps: int = 50_000
    """Environment steps over all environments."""
    num_envs: int = 8
    """Environments stepped together."""
    num_steps: int = 32
    """Rollout length per environment: one update sees num_envs * num_steps samples."""
    num_minibatches: int = 1
    """Minibatches per epoch."""
    update_epochs: int = 20
    """Epochs over each rollout."""
    lr: float = 1e-3
    """Adam's learning rate."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over the run."""
    gamma: float = 0.98
    """Discount factor."""
    gae_lambda: float = 0.8
    """GAE's lambda."""
    clip_param: float = 0.2
    """Clip range of the probability ratio."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus."""
    value_loss_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    clip_value_loss: bool = False
    """Clip the value change to clip_param in the value loss (PPO2)."""
    target_kl: float | None = None
    """Stop an update's epochs once their mean approx_kl exceeds this; None: never."""
    hidden_size: int = 64
    """Width of the two hidden layers of the actor and of the critic."""
    log_std_init: float = 0.0
    """Initial log standard deviation of a Gaussian policy (Box actions)."""
    normalize_obs: bool = False
    """Normalise observations with running statistics (gymnasium's wrapper)."""
    normalize_reward: bool = False
    """Scale rewards by a running estimate of the return's spread (gymnasium's wrapper)."""
    eval_every: int = 2_048
    """Environment steps between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = 475.0
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/PPO_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def make_env(args: Args) -> gym.Env:
    """One environment, recording raw episode returns before any normalisation."""
    env = gym.wrappers.RecordEpisodeStatistics(gym.make(args.env_id))
    if isinstance(env.action_space, gym.spaces.Box):
        env = gym.wrappers.ClipAction(env)
    if args.normalize_obs:
        env = gym.wrappers.NormalizeObservation(env)
        env = gym.wrappers.TransformObservation(
            env, lambda obs: np.clip(obs, -10, 10), env.observation_space
        )
    if args.normalize_reward:
        env = gym.wrappers.NormalizeReward(env, gamma=args.gamma)
        env = gym.wrappers.TransformReward(env, lambda reward: float(np.clip(reward, -10, 10)))
    return env


def share_obs_statistics(train_envs: Any, eval_envs: Any) -> None:
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


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train PPO with ``args``; ``callbacks`` see every update, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/PPO_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    envs = make_vector_env(lambda: make_env(args), args.num_envs)
    eval_envs = make_vector_env(lambda: make_env(args), args.eval_episodes)
    share_obs_statistics(envs, eval_envs)
    continuous = isinstance(envs.single_action_space, gym.spaces.Box)
    obs_dim = int(np.prod(envs.single_observation_space.shape))
    if continuous:
        act_dim = int(np.prod(envs.single_action_space.shape))
        model = ContinuousPPOModel(
            obs_dim, act_dim, args.hidden_size, args.log_std_init, backend=backend
        )
    else:
        act_dim = int(envs.single_action_space.n)
        model = DiscretePPOModel(obs_dim, act_dim, args.hidden_size, backend=backend)
    algorithm = parl.algorithms.get("PPO")(
        model,
        clip_param=args.clip_param,
        value_loss_coef=args.value_loss_coef,
        entropy_coef=args.entropy_coef,
        initial_lr=args.lr,
        max_grad_norm=args.max_grad_norm,
        use_clipped_value_loss=args.clip_value_loss,
        continuous_action=continuous,
        target_kl=args.target_kl,
        compile=args.compile,
    )
    agent = PPOAgent(algorithm, seed=args.seed, device=args.device)
    tracker = EvalTracker(
        agent,
        eval_envs,
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        seed=args.seed,
        run_dir=run_dir,
        env_id=args.env_id,
        target=args.target,
        callbacks=callbacks,
    )

    def act(obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        value, action, logprob = agent.sample(obs)
        return action, {"value": value, "logprob": logprob}

    batch_size = args.num_envs * args.num_steps
    num_updates = max(1, args.total_steps // batch_size)
    lr_schedule = LinearDecayScheduler(args.lr, num_updates)
    collector = RolloutCollector(envs, seed=args.seed)
    bar = progress_bar(
        num_updates * batch_size, f"PPO {args.env_id}", unit="step", disable=args.quiet
    )
    for update in range(num_updates):
        lr = args.lr if update == 0 or not args.anneal_lr else lr_schedule.step()
        rollout = collector.rollout(act, args.num_steps)
        values = rollout.extras["value"]
        advantages, returns = compute_gae(
            rollout.bootstrapped_rewards(agent.value, args.gamma),
            values,
            rollout.dones,
            agent.value(rollout.next_obs),
            rollout.next_dones,
            args.gamma,
            args.gae_lambda,
        )
        stats = agent.learn(
            rollout.flatten(rollout.obs),
            rollout.flatten(rollout.actions),
            values.reshape(-1),
            returns.reshape(-1),
            rollout.extras["logprob"].reshape(-1),
            advantages.reshape(-1),
            args.update_epochs,
            args.num_minibatches,
            lr,
        )
        collector.log_episodes()
        bar.update(batch_size)
        metrics = {f"losses/{name}": value for name, value in stats._asdict().items()}
        metrics |= {
            "charts/update_epochs": metrics.pop("losses/epochs"),
            "charts/learning_rate": lr,
        }
        if tracker.update(collector.env_steps, metrics):
            break
    bar.close()
    result = tracker.finish(collector.env_steps)
    envs.close()
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
