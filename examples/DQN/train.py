"""Train DQN or Double DQN on a gymnasium vector environment (CartPole-v1 by default).

The defaults are the RL Baselines3 Zoo settings for CartPole-v1, which reach the maximum return
of 500 within 50k environment steps. Run ``python examples/DQN/train.py --help`` for options;
a benchmark imports this file and calls :func:`train`.

``parl.utils.RolloutCollector`` steps the vector env with one batched forward pass per step.
Finished sub-environments reset in the same step, so every step gives one real transition per
environment; ``next_obs`` is the final observation where an episode ended, and transitions are
stored with ``terminal = terminated``, so episodes cut by the time limit still bootstrap.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import parl
from parl.utils import (
    LinearDecayScheduler,
    ReplayMemory,
    RolloutCollector,
    evaluate,
    logger,
    make_vector_env,
    progress_bar,
    summary,
)

import gymnasium as gym

from parl_algos_dqn import DQNAgent, DuelingQNetwork, QNetwork


def train(
    *,
    env_id: str = "CartPole-v1",
    algo: Literal["DQN", "DDQN"] = "DQN",
    dueling: bool = False,
    total_steps: int = 50_000,
    seed: int = 0,
    num_envs: int = 4,
    hidden_sizes: Sequence[int] = (256, 256),
    lr: float = 1.5e-3,
    gamma: float = 0.99,
    loss: Literal["mse", "huber"] = "huber",
    max_grad_norm: float | None = 10.0,
    buffer_size: int = 100_000,
    batch_size: int = 64,
    learning_starts: int = 1_000,
    train_freq: int = 256,
    gradient_steps: int = 128,
    target_update_interval: int = 128,
    exploration_fraction: float = 0.16,
    final_epsilon: float = 0.04,
    eval_interval: int = 2_500,
    eval_episodes: int = 10,
    target_return: float = 475.0,
    logdir: str | Path | None = None,
    save_path: str | Path | None = None,
    best_save_path: str | Path | None = None,
    restore_best: bool = True,
    progress: bool = True,
) -> dict[str, Any]:
    """Train an agent and return its figures.

    Args:
        env_id: gymnasium id of an env with flat Box observations and Discrete actions.
        algo: registry name of the algorithm, ``"DQN"`` or ``"DDQN"``.
        dueling: use a dueling Q-network instead of a plain MLP.
        total_steps: environment transitions to collect (over all sub-environments).
        seed: seeds paddle, numpy, the environments, the replay memory and exploration.
        num_envs: sub-environments stepped together.
        hidden_sizes: widths of the hidden layers of the Q-network.
        lr: Adam learning rate.
        gamma: discount factor.
        loss: TD loss, ``"mse"`` or ``"huber"``.
        max_grad_norm: global gradient-norm clip, or None.
        buffer_size: replay memory capacity.
        batch_size: transitions per gradient step.
        learning_starts: transitions collected before the first gradient step.
        train_freq: environment steps between training rounds.
        gradient_steps: gradient steps per training round.
        target_update_interval: gradient steps between hard target-network syncs.
        exploration_fraction: part of ``total_steps`` over which epsilon decays from 1.
        final_epsilon: epsilon after the decay.
        eval_interval: environment steps between greedy evaluations.
        eval_episodes: episodes per evaluation (run as that many parallel envs).
        target_return: the eval return whose first reach is reported as ``steps_to_target``.
        logdir: where TensorBoard/CSV scalars go; None logs no metrics.
        save_path: checkpoint written at the end with ``agent.save``; None saves nothing.
        best_save_path: checkpoint rewritten whenever an evaluation matches or beats the best
            so far (DQN's greedy policy can get worse late in training); None saves nothing.
        restore_best: after training, play ``eval_episodes`` fresh episodes (start states
            never evaluated before) with the final policy and with the best-evaluated one, and
            keep the better: what ``save_path`` gets and the agent holds at the end.
        progress: show a tqdm progress bar.

    Returns:
        ``env_steps``, ``wall_s``, ``sps`` (env steps per second, evaluation included),
        ``final_eval_return`` (greedy, the kept policy on the fresh episodes with
        ``restore_best``, else the last evaluation), ``last_eval_return`` (the last
        evaluation during training), ``restored_best`` (whether the best-evaluated policy
        replaced the final one), ``best_eval_return`` and ``best_eval_steps`` (the env steps
        of the first evaluation scoring it),
        ``steps_to_target`` (env steps at the first evaluation reaching ``target_return``,
        or None) and ``evals`` (a list of ``(env_steps, mean_return)``).
    """
    parl.set_seed(seed)
    envs = make_vector_env(env_id, num_envs)
    eval_envs = make_vector_env(env_id, eval_episodes)
    obs_space, act_space = envs.single_observation_space, envs.single_action_space
    if not isinstance(act_space, gym.spaces.Discrete) or len(obs_space.shape) != 1:
        raise ValueError(
            f"{env_id} has observation space {obs_space} and action space {act_space}; this "
            "example needs flat Box observations and Discrete actions"
        )
    obs_dim, act_dim = obs_space.shape[0], int(act_space.n)
    network = DuelingQNetwork if dueling else QNetwork
    algorithm = parl.algorithms.get(algo)(
        network(obs_dim, act_dim, hidden_sizes),
        gamma=gamma,
        lr=lr,
        loss=loss,
        max_grad_norm=max_grad_norm,
    )
    agent = DQNAgent(algorithm, act_dim, target_update_interval=target_update_interval, seed=seed)
    rpm = ReplayMemory(buffer_size, obs_dim=obs_dim, act_dim=0, seed=seed)
    exploration = LinearDecayScheduler(1.0, max(1, int(exploration_fraction * total_steps)))
    if logdir is not None:
        summary.set_logdir(logdir)

    collector = RolloutCollector(envs, seed=seed)
    eval_envs.reset(seed=seed + 10_000)  # later evaluations continue this seeded stream
    epsilon = 1.0
    next_train, next_eval = max(train_freq, learning_starts), eval_interval
    evals: list[tuple[int, float]] = []
    steps_to_target: int | None = None
    best_return = float("-inf")
    best_weights: dict[str, Any] = {}
    bar = progress_bar(total_steps, f"{algo} {env_id}", unit="step", disable=not progress)
    while collector.env_steps < total_steps:
        step = collector.step(agent.sample(collector.obs, epsilon))
        rpm.append_batch(step.obs, step.actions, step.rewards, step.next_obs, step.terminations)
        epsilon = final_epsilon + (1.0 - final_epsilon) * exploration.step(num_envs)
        bar.update(num_envs)
        env_steps = collector.env_steps

        if env_steps >= next_train:
            next_train += train_freq
            # One round's batches drawn and converted to tensors at once, not per step.
            for batch in rpm.sample_tensor_batches(batch_size, gradient_steps):
                td_loss = agent.learn(*batch)
            if logdir is not None:
                collector.log_episodes()
                summary.add_scalars(
                    {"losses/td_loss": float(td_loss), "charts/SPS": collector.sps},
                    env_steps,
                )
                summary.add_scalar("charts/epsilon", epsilon, env_steps)
        if env_steps >= next_eval or env_steps >= total_steps:
            next_eval += eval_interval
            mean_return = evaluate(eval_envs, agent.predict, eval_episodes).mean_return
            if mean_return >= best_return:  # ties keep the later, longer-trained policy
                best_return = mean_return
                best_weights = {k: v.copy() for k, v in algorithm.get_weights().items()}
                if best_save_path is not None:
                    agent.save(best_save_path)
            evals.append((env_steps, mean_return))
            if logdir is not None:
                summary.add_scalar("eval/episodic_return", mean_return, env_steps)
            bar.set_postfix(eval_return=f"{mean_return:.1f}", epsilon=f"{epsilon:.2f}")
            if steps_to_target is None and mean_return >= target_return:
                steps_to_target = env_steps
    bar.close()
    sps = collector.sps
    envs.close()
    final_return, restored = evals[-1][1], False
    if restore_best:
        final_return, restored = keep_better(agent, best_weights, eval_envs, eval_episodes, seed)
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
        "final_eval_return": final_return,
        "last_eval_return": evals[-1][1],
        "restored_best": restored,
        "best_eval_return": best_value,
        "best_eval_steps": best_steps,
        "steps_to_target": steps_to_target,
        "evals": evals,
    }


def keep_better(
    agent: DQNAgent,
    best_weights: dict[str, Any],
    eval_envs: gym.vector.VectorEnv,
    episodes: int,
    seed: int,
) -> tuple[float, bool]:
    """Keep the final or the best-evaluated policy, whichever plays fresh episodes better.

    Both play the same ``episodes`` start states, never used by an evaluation before, so the
    returned figure is not the maximum of noisy evaluations it was picked by.

    Returns:
        The kept policy's mean return on those episodes and whether it is the best-evaluated.
    """
    fresh = seed + 20_000
    final_weights = agent.alg.get_weights()
    final_return = evaluate(eval_envs, agent.predict, episodes, seed=fresh).mean_return
    agent.alg.set_weights(best_weights)
    best_return = evaluate(eval_envs, agent.predict, episodes, seed=fresh).mean_return
    if best_return > final_return:
        return best_return, True
    agent.alg.set_weights(final_weights)
    return final_return, False


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse the command line, train, print the final evaluation and save the agent."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1", help="gymnasium env id")
    parser.add_argument("--algo", choices=["DQN", "DDQN"], default="DQN")
    parser.add_argument("--dueling", action="store_true", help="use a dueling Q-network")
    parser.add_argument("--total-steps", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--train-freq", type=int, default=256)
    parser.add_argument("--gradient-steps", type=int, default=128)
    parser.add_argument("--eval-interval", type=int, default=2_500)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--logdir", default=None, help="default: runs/<algo>_<env>_seed<seed>")
    parser.add_argument(
        "--no-restore-best",
        action="store_true",
        help="keep the final policy even when the best-evaluated one plays better",
    )
    parser.add_argument("--quiet", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    logdir = Path(args.logdir or f"runs/{args.algo}_{args.env}_seed{args.seed}")
    result = train(
        env_id=args.env,
        algo=args.algo,
        dueling=args.dueling,
        total_steps=args.total_steps,
        seed=args.seed,
        num_envs=args.num_envs,
        learning_starts=args.learning_starts,
        train_freq=args.train_freq,
        gradient_steps=args.gradient_steps,
        eval_interval=args.eval_interval,
        eval_episodes=args.eval_episodes,
        logdir=logdir,
        save_path=logdir / "model.ckpt",
        best_save_path=logdir / "best_model.ckpt",
        restore_best=not args.no_restore_best,
        progress=not args.quiet,
    )
    logger.info(
        "final evaluation: mean greedy return %.1f over %d episodes after %d env steps "
        "(%.0f env steps/s%s); best %.1f at %d steps; checkpoints in %s",
        result["final_eval_return"],
        args.eval_episodes,
        result["env_steps"],
        result["sps"],
        ", the best-evaluated policy restored" if result["restored_best"] else "",
        result["best_eval_return"],
        result["best_eval_steps"],
        logdir,
    )
    return result


if __name__ == "__main__":
    main()
