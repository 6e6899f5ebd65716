"""The team returns of two policies that learn nothing, the floor a multi-agent result must clear.

``python -m benchmarks.marl.reference_policies [--episodes 100] [ENV ...]`` plays each particle
scenario (default ``simple_spread`` and ``simple_speaker_listener``, PARL's settings through
``parl.env.multiagent_env.ParticleEnv``) with a *random* policy (every agent draws uniformly
among its own actions, from a generator seeded with 0) and a *still* one (every agent takes
action 0, "no action"), one episode per env seed ``0 .. episodes - 1``, and prints the mean and
standard deviation of the team return (every agent's rewards summed, as the examples report).
"""

from __future__ import annotations

import argparse

from parl.env.multiagent_env import ParticleEnv

import gymnasium as gym
import numpy as np


def team_returns(env_id: str, policy: str, episodes: int) -> np.ndarray:
    """The team return of ``episodes`` episodes of ``policy`` (``random`` or ``still``)."""
    env = ParticleEnv(env_id)
    if not all(isinstance(space, gym.spaces.Discrete) for space in env.action_space):
        raise ValueError(f"{env_id}: the reference policies need discrete actions")
    rng = np.random.default_rng(0)
    returns = np.zeros(episodes)
    for episode in range(episodes):
        env.reset(seed=episode)
        done = False
        while not done:
            if policy == "random":
                actions = [int(rng.integers(space.n)) for space in env.action_space]
            else:
                actions = [0] * env.n
            _, rewards, terminated, truncated, _ = env.step(actions)
            returns[episode] += sum(rewards)
            done = all(terminated) or any(truncated)
    env.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("envs", nargs="*", default=["simple_spread", "simple_speaker_listener"])
    parser.add_argument("--episodes", type=int, default=100)
    args = parser.parse_args()
    for env_id in args.envs:
        for policy in ("random", "still"):
            returns = team_returns(env_id, policy, args.episodes)
            print(f"{env_id} {policy}: {returns.mean():.1f} ± {returns.std():.1f}")


if __name__ == "__main__":
    main()
