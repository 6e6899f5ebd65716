"""PPO with its learner on a GPU actor and its samplers on CPU actors of an xparl cluster.

The pattern for a cluster with GPUs: the learner is a ``@parl.remote_class(n_gpu=1)`` actor (the
cluster gives it one GPU, which it sees as ``cuda:0`` through ``CUDA_VISIBLE_DEVICES``) and the
samplers are plain actors, one CPU each, that act with a copy of the policy on the CPU. Each
update, the samplers return rollouts with GAE advantages; the learner runs PPO's epochs on them
on its device and returns its new weights, which go out with the next requests.

``xparl start --port 8010 --cpu_num 4 --gpu 0`` then ``python examples/GPU_Learner/train.py
--address 127.0.0.1:8010 --learner-gpus 1 --backend torch`` trains with the learner on GPU 0.
With ``--learner-gpus 0`` (the default) the learner is a CPU actor and trains on the CPU: the
embedded cluster that starts without ``--address`` offers no GPU, and this is how CI runs the
example. ``--help`` lists every flag.
"""

from __future__ import annotations

import dataclasses
import os
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

import numpy as np

from parl_algos_pg import PPO, DiscretePPOModel, PPOAgent


@dataclasses.dataclass(frozen=True)
class Args:
    """PPO: one learner actor (on a GPU with learner_gpus=1), samplers on CPU actors."""

    env_id: str = "CartPole-v1"
    """Gymnasium id with flat Box observations and Discrete actions."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework: paddle or torch (a GPU learner needs torch); None: parl.get_backend()."""
    learner_gpus: Literal[0, 1] = 0
    """GPUs the learner actor reserves: 1 trains it on cuda (a worker started with --gpu), 0 on
    the CPU."""
    seed: int = 0
    """Seeds the learner, the samplers (seed + 1000 * (i + 1)) and evaluation."""
    total_steps: int = 100_000
    """Environment steps over all samplers."""
    address: str | None = None
    """An xparl cluster's HOST:PORT; None: an embedded cluster (CPUs only)."""
    num_samplers: int = 2
    """Sampler actors, one CPU each."""
    envs_per_sampler: int = 4
    """Sub-environments per sampler."""
    num_steps: int = 128
    """Steps per sub-environment per update."""
    hidden_size: int = 64
    """Width of the model's hidden layers."""
    update_epochs: int = 4
    """PPO epochs per rollout."""
    num_minibatches: int = 4
    """Minibatches per epoch."""
    lr: float = 2.5e-4
    """Adam's learning rate, decayed linearly over the run."""
    clip_param: float = 0.2
    """PPO's clip range."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE's lambda."""
    eval_every: int = 10_000
    """Environment steps between greedy evaluations (in this process, on the CPU)."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = 475.0
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/GPU_Learner_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def build_agent(args: Args, obs_dim: int, act_dim: int, backend: str, device: str) -> PPOAgent:
    """The learner's, every sampler's and the evaluation's agent: PPO on ``device``."""
    model = DiscretePPOModel(obs_dim, act_dim, args.hidden_size, backend=backend)
    return PPOAgent(
        PPO(model, clip_param=args.clip_param, initial_lr=args.lr), args.seed, device=device
    )


@parl.remote_class(wait=False)
class Sampler:
    """Steps ``envs_per_sampler`` copies of the env with the learner's latest weights (CPU)."""

    def __init__(self, args: Args, obs_dim: int, act_dim: int, backend: str, seed: int) -> None:
        parl.set_seed(seed, backend=backend)
        self.args = args
        self.agent = build_agent(args, obs_dim, act_dim, backend, "cpu")
        self.collector = RolloutCollector(
            make_vector_env(args.env_id, args.envs_per_sampler), seed=seed
        )

    def sample(self, weights: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list]:
        """Load ``weights``, collect ``num_steps`` steps of every env; return a flat batch and
        the ``(return, length)`` of the episodes that ended."""
        agent, args = self.agent, self.args
        agent.set_weights(weights)

        def act(obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
            value, action, logprob = agent.sample(obs)
            return action, {"value": value, "logprob": logprob}

        rollout = self.collector.rollout(act, args.num_steps)
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
        batch = {
            "obs": rollout.flatten(rollout.obs),
            "action": rollout.flatten(rollout.actions),
            "value": values.reshape(-1),
            "returns": returns.reshape(-1),
            "logprob": rollout.extras["logprob"].reshape(-1),
            "adv": advantages.reshape(-1),
        }
        episodes = [(e.episodic_return, e.episodic_length) for e in self.collector.pop_episodes()]
        return batch, episodes


class Learner:
    """PPO on the GPU this actor was given (``cuda``), or on the CPU when it was given none."""

    def __init__(self, args: Args, obs_dim: int, act_dim: int, backend: str) -> None:
        parl.set_seed(args.seed, backend=backend)
        self.args = args
        self.device = "cuda" if args.learner_gpus else "cpu"
        self.agent = build_agent(args, obs_dim, act_dim, backend, self.device)

    def where(self) -> str:
        """The learner's device and the GPUs the cluster gave its process."""
        return f"{self.device} (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r})"

    def get_weights(self) -> dict[str, np.ndarray]:
        """The policy's weights, numpy on the host."""
        return self.agent.get_weights()

    def learn(self, batch: dict[str, np.ndarray], lr: float) -> tuple[dict[str, Any], dict]:
        """PPO's epochs on ``batch`` (one copy to the device); the statistics and new weights."""
        args = self.args
        stats = self.agent.learn(
            **batch, epochs=args.update_epochs, num_minibatches=args.num_minibatches, lr=lr
        )
        return stats._asdict(), self.agent.get_weights()


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every update, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/GPU_Learner_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    if args.learner_gpus and backend != "torch":
        raise ValueError(
            f"--learner-gpus 1 trains on cuda, which needs --backend torch, not {backend}"
        )
    parl.set_seed(args.seed, backend=backend)

    eval_envs = make_vector_env(args.env_id, args.eval_episodes)
    obs_dim = eval_envs.single_observation_space.shape[0]
    act_dim = int(eval_envs.single_action_space.n)
    agent = build_agent(args, obs_dim, act_dim, backend, "cpu")
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

    parl.connect(args.address, cpu_num=None if args.address else args.num_samplers + 1)
    remote_learner = parl.remote_class(n_gpu=args.learner_gpus)(Learner)
    learner = remote_learner(args, obs_dim, act_dim, backend)
    print(f"learner on {learner.where()}")
    samplers = [
        Sampler(args, obs_dim, act_dim, backend, args.seed + 1000 * (i + 1))
        for i in range(args.num_samplers)
    ]
    batch_size = args.num_samplers * args.envs_per_sampler * args.num_steps
    num_updates = max(1, args.total_steps // batch_size)
    schedule = LinearDecayScheduler(args.lr, num_updates)
    weights, env_steps = learner.get_weights(), 0
    bar = progress_bar(
        num_updates * batch_size, f"PPO {args.env_id}", unit="step", disable=args.quiet
    )
    for update in range(num_updates):
        futures = [sampler.sample(weights) for sampler in samplers]
        batches, episodes = zip(*(future.get() for future in futures), strict=True)
        batch = {key: np.concatenate([b[key] for b in batches]) for key in batches[0]}
        lr = args.lr if update == 0 else max(schedule.step(), 1e-8)
        stats, weights = learner.learn(batch, lr)
        agent.set_weights(weights)
        env_steps += batch_size
        bar.update(batch_size)
        for episode_return, length in (e for ended in episodes for e in ended):
            summary.add_scalar("charts/episodic_return", episode_return, env_steps)
            summary.add_scalar("charts/episodic_length", length, env_steps)
        metrics = {f"losses/{name}": value for name, value in stats.items() if name != "epochs"}
        if tracker.update(env_steps, metrics | {"charts/learning_rate": lr}):
            break
    bar.close()
    del samplers, learner
    result = tracker.finish(env_steps)
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
