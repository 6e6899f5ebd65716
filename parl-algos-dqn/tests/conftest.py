"""Shared helpers: a linear Q-model with settable weights and a seeded identity-env trainer."""

from __future__ import annotations

from types import SimpleNamespace

import parl
from parl.testing import IdentityEnv
from parl.utils.replay_memory import ReplayMemory

import numpy as np
import paddle
import pytest

from parl_algos_dqn import DQNAgent, QNetwork


class LinearQ(parl.Model):
    """``Q = obs @ W + b``: small enough to write the TD loss by hand in numpy."""

    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(obs_dim, act_dim)

    def forward(self, obs):
        return self.fc(obs)


def identity_agent(
    algo_cls: type, seed: int, n: int = 4, **options
) -> tuple[DQNAgent, IdentityEnv]:
    """A fresh, fully seeded agent and environment for the identity task."""
    parl.set_seed(seed)
    algorithm = algo_cls(QNetwork(n, n, hidden_sizes=(32,)), gamma=0.9, lr=5e-3, **options)
    agent = DQNAgent(algorithm, act_dim=n, target_update_interval=50, seed=seed)
    env = IdentityEnv(n=n, episode_length=20)
    return agent, env


def train_identity(agent: DQNAgent, env: IdentityEnv, steps: int, seed: int) -> None:
    """Collect ``steps`` epsilon-greedy transitions and learn once per step after a warm-up."""
    rpm = ReplayMemory(10_000, obs_dim=env.n, act_dim=0, seed=seed)
    obs, _ = env.reset(seed=seed)
    for step in range(steps):
        epsilon = max(0.05, 1.0 - step / (0.5 * steps))
        action = int(agent.sample(obs[None], epsilon)[0])
        next_obs, reward, terminated, truncated, _ = env.step(action)
        rpm.append(obs, action, reward, next_obs, terminated)
        obs = next_obs
        if terminated or truncated:
            obs, _ = env.reset()
        if step >= 100:
            agent.learn(*rpm.sample_batch(32))


def greedy_return(agent: DQNAgent, env: IdentityEnv, episodes: int, seed: int) -> float:
    """Mean return of the greedy policy."""
    total = 0.0
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(int(agent.predict(obs[None])[0]))
            total += reward
            done = terminated or truncated
    return total / episodes


@pytest.fixture(autouse=True)
def _seed() -> None:
    parl.set_seed(0)


@pytest.fixture
def helpers() -> SimpleNamespace:
    """The helpers above, by name."""
    return SimpleNamespace(
        LinearQ=LinearQ,
        identity_agent=identity_agent,
        train_identity=train_identity,
        greedy_return=greedy_return,
    )


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
