"""A PARL 2.x DQN agent runs as it was written, but for ``gym`` → ``gymnasium``.

Written from PARL 2.x's documented DQN API (its CartPole example's shape): one observation
into ``alg.predict``, ``[B, 1]`` actions, rewards and terminals, the agent syncing the target
with ``alg.sync_target()`` every few learn calls, ``parl.utils.ReplayMemory``,
``agent.save`` / ``agent.restore``. The budget is tiny; the point is that nothing breaks.
"""

from __future__ import annotations

from pathlib import Path

import parl
from parl.algorithms import DQN
from parl.utils import ReplayMemory

import gymnasium as gym
import numpy as np
import paddle


class CartpoleModel(parl.Model):
    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.fc1 = paddle.nn.Linear(obs_dim, 128)
        self.fc2 = paddle.nn.Linear(128, 128)
        self.fc3 = paddle.nn.Linear(128, act_dim)

    def forward(self, obs):
        return self.fc3(
            paddle.nn.functional.relu(self.fc2(paddle.nn.functional.relu(self.fc1(obs))))
        )


class CartpoleAgent(parl.Agent):
    def __init__(self, algorithm, act_dim: int, e_greed: float = 0.1) -> None:
        super().__init__(algorithm)
        self.act_dim = act_dim
        self.e_greed = e_greed
        self.global_step = 0
        self.update_target_steps = 10

    def sample(self, obs):
        if np.random.random() < self.e_greed:
            return np.random.randint(self.act_dim)
        return self.predict(obs)

    def predict(self, obs):
        pred_q = self.alg.predict(paddle.to_tensor(obs, dtype="float32"))
        return int(pred_q.argmax())

    def learn(self, obs, act, reward, next_obs, terminal):
        if self.global_step % self.update_target_steps == 0:
            self.alg.sync_target()
        self.global_step += 1
        act = np.expand_dims(act, -1)
        reward = np.expand_dims(reward, -1)
        terminal = np.expand_dims(terminal, -1)
        loss = self.alg.learn(
            paddle.to_tensor(obs, dtype="float32"),
            paddle.to_tensor(act, dtype="int32"),
            paddle.to_tensor(reward, dtype="float32"),
            paddle.to_tensor(next_obs, dtype="float32"),
            paddle.to_tensor(terminal, dtype="float32"),
        )
        return float(loss)


def test_parl_style_dqn_agent(tmp_path: Path) -> None:
    np.random.seed(0)
    env = gym.make("CartPole-v1")
    rpm = ReplayMemory(1000, 4, 0)
    agent = CartpoleAgent(DQN(CartpoleModel(4, 2), gamma=0.99, lr=1e-3), act_dim=2)
    obs, _ = env.reset(seed=0)
    for step in range(150):
        action = agent.sample(obs)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        rpm.append(obs, action, reward, next_obs, terminated)
        obs = env.reset()[0] if terminated or truncated else next_obs
        if len(rpm) > 64 and step % 5 == 0:
            loss = agent.learn(*rpm.sample_batch(32))
            assert np.isfinite(loss)
    assert agent.global_step > agent.update_target_steps
    agent.alg.sync_target()
    online, target = agent.alg.model.get_weights(), agent.alg.target_model.get_weights()
    assert all(np.array_equal(online[k], target[k]) for k in online)

    agent.save(str(tmp_path / "dqn_model.ckpt"))
    restored = CartpoleAgent(DQN(CartpoleModel(4, 2), gamma=0.99, lr=1e-3), act_dim=2)
    restored.restore(str(tmp_path / "dqn_model.ckpt"))
    assert restored.predict(obs) == agent.predict(obs)
    assert sorted(agent.get_weights())[:2] == ["fc1.bias", "fc1.weight"]
