"""A2C on CartPole-v1 with its samplers as remote actors on an xparl cluster.

``python examples/A2C/train.py`` starts an embedded local cluster (``parl.connect()``);
``--address HOST:PORT`` joins one started with ``xparl start`` (``--address ray`` or
``ray://HEAD:10001``: a Ray cluster). Each sampler is a
``@parl.remote_class`` actor in its own process that steps its own vector env with a copy of the
policy and returns ``num_steps`` steps with GAE advantages; the learner sends the latest weights
with every request, gathers all batches, and takes one A2C step on them (PARL's "A2C with
remote actors", synchronous). ``--backend torch`` runs the learner and the samplers on torch,
``--device cuda`` puts the learner on a GPU (the samplers act on the CPU). ``--help`` lists
every flag.
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
    compute_gae,
    make_vector_env,
    parse_args,
    progress_bar,
    save_config,
    summary,
)

import gymnasium as gym
import numpy as np

from parl_algos_ac import A2C, A2CAgent, DiscreteActorCritic


@dataclasses.dataclass(frozen=True)
class Args:
    """A2C with remote samplers on an env with flat Box observations and Discrete actions."""

    env_id: str = "CartPole-v1"
    """Gymnasium id with flat Box observations and Discrete actions."""
    backend: Literal["paddle", "torch"] | None = None
    """Framework of the learner and the samplers: paddle or torch; None: parl.get_backend()."""
    device: str = "cpu"
    """Where the torch learner trains: cpu, cuda or cuda:<index> (paddle: cpu only here)."""
    seed: int = 0
    """Seeds the learner, the samplers (seed + 1000 * (i + 1)) and evaluation."""
    total_steps: int = 300_000
    """Environment steps over all samplers."""
    address: str | None = None
    """An xparl cluster's HOST:PORT, "ray" or "ray://HEAD:PORT"; None: an embedded xparl cluster."""
    num_samplers: int = 2
    """Remote actors, one CPU each."""
    envs_per_sampler: int = 4
    """Sub-environments per sampler."""
    num_steps: int = 16
    """Steps per sub-environment per update."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the model's hidden layers."""
    shared_trunk: bool = False
    """One trunk for policy and value (PARL's A2C model). Off by default: on a shared trunk the
    value loss, whose targets grow with the episodes, drove the features, and greedy returns
    swung between 120 and 490 to the end."""
    lr: float = 2e-3
    """Adam's learning rate, decayed linearly to 0 over the run (PARL's 1e-3 left two of three
    CartPole seeds at 355-381 after reaching 500; see the benchmark)."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE's lambda."""
    entropy_coeff: float = -0.01
    """PARL's sign: negative maximises entropy."""
    eval_every: int = 10_000
    """Environment steps between greedy evaluations in the learner."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    target: float | None = 475.0
    """The evaluation return whose first reach is reported."""
    logdir: str | None = None
    """Run directory (config, metrics, checkpoints); runs/A2C_<env>_seed<seed> if None."""
    quiet: bool = False
    """Hide the progress bar."""


def build_agent(
    obs_dim: int,
    act_dim: int,
    hidden_sizes: Sequence[int],
    shared_trunk: bool = False,
    backend: str | None = None,
    device: str = "cpu",
) -> A2CAgent:
    """The learner's and every sampler's agent (A2C from the registry) on ``backend``."""
    backend = backend or parl.get_backend()
    a2c: type[A2C] = parl.algorithms.get("A2C", backend=backend)
    model = DiscreteActorCritic(obs_dim, act_dim, hidden_sizes, shared_trunk, backend=backend)
    return A2CAgent(a2c(model, vf_loss_coeff=0.5), device=device)


@parl.remote_class(wait=False)
class Sampler:
    """Steps ``num_envs`` copies of ``env_id`` with the learner's latest policy.

    Args:
        env_id: a gymnasium id with flat observations and Discrete actions.
        num_envs: sub-environments of this sampler's vector env.
        hidden_sizes: the model's hidden layers (as the learner's).
        shared_trunk: whether policy and value share their hidden layers (as the learner's).
        seed: seeds the policy's sampling and the environments.
        backend: the learner's framework (the weights it sends are laid out for it).
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        hidden_sizes: Sequence[int],
        seed: int,
        shared_trunk: bool = False,
        backend: str | None = None,
    ):
        parl.set_seed(seed, backend=backend)
        envs = make_vector_env(env_id, num_envs)
        obs_dim = envs.single_observation_space.shape[0]
        act_dim = int(envs.single_action_space.n)
        self.agent = build_agent(obs_dim, act_dim, hidden_sizes, shared_trunk, backend)
        self.collector = RolloutCollector(envs, seed=seed)

    def sample(
        self, weights: dict[str, np.ndarray], num_steps: int, gamma: float, gae_lambda: float
    ) -> tuple[dict[str, np.ndarray], list[tuple[float, int]]]:
        """Load ``weights``, collect ``num_steps`` steps of every env, return a flat batch.

        Returns:
            ``obs``, ``actions``, ``advantages``, ``target_values`` (``[num_steps·num_envs]``),
            and the ``(return, length)`` of the episodes that ended (maybe none).
        """
        agent = self.agent
        agent.set_weights(weights)

        def act(obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
            actions, values = agent.sample(obs)
            return actions, {"value": values}

        rollout = self.collector.rollout(act, num_steps)
        values = rollout.extras["value"]
        advantages, returns = compute_gae(
            rollout.bootstrapped_rewards(agent.value, gamma),
            values,
            rollout.dones,
            agent.value(rollout.next_obs),
            rollout.next_dones,
            gamma,
            gae_lambda,
        )
        episodes = [(e.episodic_return, e.episodic_length) for e in self.collector.pop_episodes()]
        batch = {
            "obs": rollout.flatten(rollout.obs),
            "actions": rollout.flatten(rollout.actions),
            "advantages": advantages.reshape(-1),
            "target_values": returns.reshape(-1),
        }
        return batch, episodes


def train(args: Args, callbacks: Sequence[Callback] = ()) -> RunResult:
    """Train with ``args``; ``callbacks`` see every update, evaluation and checkpoint."""
    run_dir = Path(args.logdir or f"runs/A2C_{args.env_id}_seed{args.seed}")
    save_config(args, run_dir)
    summary.set_logdir(run_dir)
    backend = args.backend or parl.get_backend()
    parl.set_seed(args.seed, backend=backend)

    eval_envs = make_vector_env(args.env_id, args.eval_episodes)
    obs_space, act_space = eval_envs.single_observation_space, eval_envs.single_action_space
    if not isinstance(act_space, gym.spaces.Discrete) or len(obs_space.shape) != 1:
        raise ValueError(
            f"{args.env_id}: this example needs flat Box observations, Discrete actions"
        )
    obs_dim, act_dim = obs_space.shape[0], int(act_space.n)
    agent = build_agent(
        obs_dim, act_dim, args.hidden_sizes, args.shared_trunk, backend, args.device
    )
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

    parl.connect(args.address, cpu_num=None if args.address else args.num_samplers)
    samplers = [
        Sampler(
            args.env_id,
            args.envs_per_sampler,
            args.hidden_sizes,
            args.seed + 1000 * (i + 1),
            args.shared_trunk,
            backend,
        )
        for i in range(args.num_samplers)
    ]
    batch_size = args.num_samplers * args.envs_per_sampler * args.num_steps
    num_updates = max(1, args.total_steps // batch_size)
    schedule = LinearDecayScheduler(args.lr, num_updates)
    env_steps = 0
    bar = progress_bar(
        num_updates * batch_size, f"A2C {args.env_id}", unit="step", disable=args.quiet
    )
    for update in range(num_updates):
        weights = agent.get_weights()
        futures = [
            sampler.sample(weights, args.num_steps, args.gamma, args.gae_lambda)
            for sampler in samplers
        ]
        batches, episodes = zip(*(future.get() for future in futures), strict=True)
        batch = {key: np.concatenate([b[key] for b in batches]) for key in batches[0]}
        learning_rate = max(schedule.step(), 1e-8) if update else args.lr
        total_loss, pi_loss, vf_loss, entropy = agent.learn(
            batch["obs"],
            batch["actions"],
            batch["advantages"],
            batch["target_values"],
            learning_rate,
            args.entropy_coeff,
        )
        env_steps += batch_size
        bar.update(batch_size)
        for episode_return, length in (
            e for sampler_episodes in episodes for e in sampler_episodes
        ):
            summary.add_scalar("charts/episodic_return", episode_return, env_steps)
            summary.add_scalar("charts/episodic_length", length, env_steps)
        metrics = {"losses/total_loss": total_loss, "losses/policy_loss": pi_loss}
        metrics |= {"losses/value_loss": vf_loss, "losses/entropy": entropy}
        if tracker.update(env_steps, metrics | {"charts/learning_rate": learning_rate}):
            break
    bar.close()
    del samplers
    result = tracker.finish(env_steps)
    summary.close()
    return result


if __name__ == "__main__":
    print(train(parse_args(Args)).summary())
