"""Train DQN or Double DQN on a gymnasium vector environment (CartPole-v1 by default).

The defaults are the RL Baselines3 Zoo settings for CartPole-v1 (lr 1.5e-3 instead of 2.3e-3,
see benchmarks/dqn/results.md), which reach the maximum return of 500 within 50k environment
steps. ``python examples/DQN/train.py --help`` lists every flag.

``parl.utils.RolloutCollector`` steps the vector env with one batched forward pass per step.
Finished sub-environments reset in the same step, so every step gives one real transition per
environment; ``next_obs`` is the final observation where an episode ended, and transitions are
stored with ``terminal = terminated``, so episodes cut by the time limit still bootstrap.

``--backend torch`` trains the same classes on torch with the same settings, ``--device cuda``
on a GPU, where the replay memory lives on the GPU too (``parl.utils.DeviceReplayMemory``: each
training round's batches are drawn and gathered there).
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
    LinearDecayScheduler,
    RolloutCollector,
    RunResult,
    make_replay_memory,
    make_vector_env,
    parse_args,
    progress_bar,
    save_config,
    summary,
)

import gymnasium as gym

from parl_algos_dqn import DQNAgent, DuelingQNetwork, QNetwork


@dataclasses.dataclass(frozen=True)
class Args:
    """DQN or Double DQN with a replay memory on an env with Discrete actions."""

    env_id: str = "CartPole-v1"
    """Gymnasium id of an env with flat Box observations and Discrete actions."""
    algo: Literal["DQN", "DDQN"] = "DQN"
    """Registry name of the algorithm."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch; None: parl.get_backend() (PARL_BACKEND, else the installed)."""
    device: str = "cpu"
    """Where the torch backend trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    compile: bool = False
    """Capture each update with torch.compile (CUDA graphs on a GPU); paddle runs eagerly."""
    dueling: bool = False
    """Use a dueling Q-network instead of a plain MLP."""
    seed: int = 0
    """Seeds the framework, numpy, the environments, the replay memory and exploration."""
    total_steps: int = 50_000
    """Environment transitions to collect (over all sub-environments)."""
    num_envs: int = 4
    """Sub-environments stepped together."""
    env_engine: Literal["gymnasium", "envpool"] = "gymnasium"
    """What steps the training environments: gymnasium's SyncVectorEnv, or EnvPool's C++ envs
    on their own threads (pip install "parl-utils[envpool]"; evaluation stays on gymnasium)."""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Widths of the hidden layers of the Q-network."""
    lr: float = 1.5e-3
    """Adam's learning rate."""
    gamma: float = 0.99
    """Discount factor."""
    loss: Literal["mse", "huber"] = "huber"
    """TD loss."""
    max_grad_norm: float | None = 10.0
    """Global gradient-norm clip; None: no clip."""
    buffer_size: int = 100_000
    """Replay memory capacity."""
    replay_memory: Literal["auto", "host", "device"] = "auto"
    """Where the replay memory lives: host (numpy), device (tensors on --device, sampled there:
    no host-to-device copy per gradient step); auto: device unless --device is cpu (the numpy
    memory made the committed results)."""
    batch_size: int = 64
    """Transitions per gradient step."""
    learning_starts: int = 1_000
    """Transitions collected before the first gradient step."""
    train_freq: int = 256
    """Environment steps between training rounds."""
    gradient_steps: int = 128
    """Gradient steps per training round."""
    target_update_interval: int = 128
    """Gradient steps between hard target-network syncs."""
    exploration_fraction: float = 0.16
    """Part of total_steps over which epsilon decays from 1."""
    final_epsilon: float = 0.04
    """Epsilon after the decay."""
    eval_every: int = 2_500
    """Environment steps between greedy evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = 475.0
    """The evaluation return whose first reach is reported."""
    restore_best: bool = True
    """End with the final or the best-evaluated policy, whichever plays fresh episodes better."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/<algo>_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every training round, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/{args.algo}_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    envs = make_vector_env(args.env_id, args.num_envs, engine=args.env_engine, seed=args.seed)
    obs_space, act_space = envs.single_observation_space, envs.single_action_space
    if not isinstance(act_space, gym.spaces.Discrete) or len(obs_space.shape) != 1:
        raise ValueError(
            f"{args.env_id} has observation space {obs_space} and action space {act_space}; "
            "this example needs flat Box observations and Discrete actions"
        )
    obs_dim, act_dim = obs_space.shape[0], int(act_space.n)
    network = DuelingQNetwork if args.dueling else QNetwork
    algorithm = parl.algorithms.get(args.algo)(
        network(obs_dim, act_dim, args.hidden_sizes, backend=backend),
        gamma=args.gamma,
        lr=args.lr,
        loss=args.loss,
        max_grad_norm=args.max_grad_norm,
        compile=args.compile,
    )
    agent = DQNAgent(
        algorithm,
        act_dim,
        target_update_interval=args.target_update_interval,
        seed=args.seed,
        device=args.device,
    )
    rpm = make_replay_memory(
        args.buffer_size,
        obs_dim,
        0,
        where=args.replay_memory,
        device=args.device,
        backend=backend,
        seed=args.seed,
    )
    exploration = LinearDecayScheduler(
        1.0, max(1, int(args.exploration_fraction * args.total_steps))
    )
    tracker = EvalTracker(
        agent,
        make_vector_env(args.env_id, args.eval_episodes),
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        seed=args.seed,
        run_dir=run_dir,
        env_id=args.env_id,
        target=args.target,
        callbacks=callbacks,
    )

    collector = RolloutCollector(envs, seed=args.seed)
    epsilon = 1.0
    next_train = max(args.train_freq, args.learning_starts)
    bar = progress_bar(
        args.total_steps, f"{args.algo} {args.env_id}", unit="step", disable=args.quiet
    )
    while collector.env_steps < args.total_steps:
        step = collector.step(agent.sample(collector.obs, epsilon))
        rpm.append_batch(step.obs, step.actions, step.rewards, step.next_obs, step.terminations)
        epsilon = args.final_epsilon + (1.0 - args.final_epsilon) * exploration.step(args.num_envs)
        bar.update(args.num_envs)
        metrics = {}
        if collector.env_steps >= next_train:
            next_train += args.train_freq
            # One round's batches drawn and converted to tensors at once, not per step.
            for batch in rpm.sample_tensor_batches(args.batch_size, args.gradient_steps, backend):
                td_loss = agent.learn(*batch)
            collector.log_episodes()
            metrics = {"losses/td_loss": float(td_loss), "charts/epsilon": epsilon}
        if tracker.update(collector.env_steps, metrics):
            break
    bar.close()
    result = tracker.finish(collector.env_steps, keep_better=args.restore_best)
    envs.close()
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
