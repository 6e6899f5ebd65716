"""PARL 2.x torch code runs as it was written, but for ``gym`` → ``gymnasium``.

The models and agents below are written from PARL 2.2.1's torch benchmarks' documented use
(``benchmark/torch/QuickStart`` and ``benchmark/torch/ppo``): ``torch.tensor`` observations
on the agent's ``self.device`` (which PARL's torch agents set in ``__init__``) into
``PolicyGradient.predict`` (one unbatched observation) and ``learn`` (actions ``[B]``,
``loss.item()``); ``PPO.sample`` giving actions ``[B, ...]`` straight to the environment (no
``[0]``, unlike paddle PARL's agents), ``predict`` on ``obs.unsqueeze(0)`` flattened, minibatches
from ``torch.from_numpy`` and a ``[1, act_dim]`` log-std parameter. Budgets are tiny; the point
is that nothing breaks and shapes are what PARL's torch code expects.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parl.algorithms import PPO, PolicyGradient  # noqa: E402
from parl.core.torch import Agent, Model  # noqa: E402
from parl.utils import calc_discount_sum_rewards  # noqa: E402


class CartpoleModel(Model):
    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(obs_dim, act_dim * 10)
        self.fc2 = torch.nn.Linear(act_dim * 10, act_dim)

    def forward(self, x):
        return torch.nn.functional.softmax(self.fc2(torch.tanh(self.fc1(x))), dim=-1)


def _device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CartpoleAgent(Agent):
    def __init__(self, algorithm):
        super().__init__(algorithm)
        self.device = _device()  # PARL's torch agents set it; it moves the algorithm

    def sample(self, obs):
        obs = torch.tensor(obs, device=self.device, dtype=torch.float)
        prob = self.alg.predict(obs).cpu().data.numpy()
        return int(np.random.choice(len(prob), 1, p=prob)[0])

    def predict(self, obs):
        obs = torch.tensor(obs, device=self.device, dtype=torch.float)
        _, action = self.alg.predict(obs).max(-1)
        return action.item()

    def learn(self, obs, action, reward):
        obs = torch.tensor(obs, device=self.device, dtype=torch.float)
        action = torch.tensor(action, device=self.device, dtype=torch.long)
        reward = torch.tensor(reward, device=self.device, dtype=torch.float)
        return self.alg.learn(obs, action, reward).item()


def test_quickstart_agent(tmp_path) -> None:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    np.random.seed(0)
    torch.manual_seed(0)
    agent = CartpoleAgent(PolicyGradient(CartpoleModel(4, 2), lr=1e-3))
    for _ in range(3):
        obs_list, action_list, reward_list = [], [], []
        obs, _ = env.reset()
        done = False
        while not done:
            obs_list.append(obs)
            action_list.append(agent.sample(obs))
            obs, reward, terminated, truncated, _ = env.step(action_list[-1])
            reward_list.append(reward)
            done = terminated or truncated
        returns = calc_discount_sum_rewards(reward_list, 0.99)
        loss = agent.learn(np.array(obs_list), np.array(action_list), returns)
        assert np.isfinite(loss)
    agent.save(str(tmp_path / "model.ckpt"))
    restored = CartpoleAgent(PolicyGradient(CartpoleModel(4, 2), lr=1e-3))
    restored.restore(str(tmp_path / "model.ckpt"))
    obs, _ = env.reset(seed=1)
    assert restored.predict(obs) == agent.predict(obs)
    assert sorted(agent.get_weights()) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]


class MujocoModel(Model):
    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(obs_dim, 64), torch.nn.Linear(64, 64)
        self.fc_value, self.fc_policy = torch.nn.Linear(64, 1), torch.nn.Linear(64, act_dim)
        self.fc_pi_std = torch.nn.Parameter(torch.zeros(1, act_dim))

    def _body(self, obs):
        return torch.tanh(self.fc2(torch.tanh(self.fc1(obs))))

    def value(self, obs):
        return self.fc_value(self._body(obs))

    def policy(self, obs):
        mean = self.fc_policy(self._body(obs))
        return mean, torch.exp(self.fc_pi_std.expand_as(mean))


class PPOAgent(Agent):
    def __init__(self, algorithm):
        super().__init__(algorithm)
        self.device = _device()

    def predict(self, obs):
        obs = torch.FloatTensor(obs).unsqueeze(0).to(self.device)
        return self.alg.predict(obs).cpu().detach().numpy().flatten()

    def sample(self, obs):
        value, action, logp, entropy = self.alg.sample(torch.FloatTensor(obs).to(self.device))
        return tuple(t.cpu().detach().numpy() for t in (value, action, logp, entropy))

    def learn(self, batch, minibatch: int):
        losses = []
        for start in range(0, len(batch[0]), minibatch):
            rows = [
                torch.from_numpy(np.ascontiguousarray(a[start : start + minibatch])).to(self.device)
                for a in batch
            ]
            losses.append(self.alg.learn(*rows, None))
        return losses


def test_ppo_agent_of_the_torch_benchmark() -> None:
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1")] * 2)
    obs, _ = envs.reset(seed=0)
    torch.manual_seed(0)
    agent = PPOAgent(
        PPO(MujocoModel(3, 1), clip_param=0.2, initial_lr=3e-4, continuous_action=True)
    )
    rows = []
    for _ in range(8):
        value, action, logp, _ = agent.sample(obs.astype("float32"))
        assert action.shape == (2, 1) and logp.shape == (2,) and value.shape == (2,)
        next_obs, reward, _, _, _ = envs.step(np.clip(action, -2.0, 2.0))
        rows.append(
            (obs.astype("float32"), action, value.flatten(), logp, reward.astype("float32"))
        )
        obs = next_obs
    b_obs, b_act, b_val, b_logp, b_rew = (np.concatenate(c) for c in zip(*rows, strict=True))
    batch = (b_obs, b_act, b_val, b_rew, b_logp, b_rew - b_val)
    for losses in agent.learn(batch, minibatch=4):
        # 0-d tensors where PARL returned floats: what PARL's benchmark does with them works.
        assert all(x.ndim == 0 and np.isfinite(float(x)) for x in losses)
    assert agent.predict(obs[0]).shape == (1,)
    envs.close()
