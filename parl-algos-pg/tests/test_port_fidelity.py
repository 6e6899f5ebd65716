"""PARL 2.x code runs as it was written, but for ``gym`` → ``gymnasium``.

The model and agents below are written from PARL 2.x's documented API (its QuickStart and its
MuJoCo PPO example): numpy into ``paddle.to_tensor``, one unbatched observation into
``PolicyGradient.predict``, actions and rewards shaped ``[B, 1]``, ``agent.save`` /
``agent.restore``, ``get_weights()`` names such as ``fc1.weight``,
``target.set_weights(learner.get_weights())``; PPO with a ``[1, act_dim]`` standard deviation
and a learning-rate schedule that ends at exactly 0. Budgets are tiny; the point is that
nothing breaks.
"""

from __future__ import annotations

from pathlib import Path

import parl
from parl.algorithms import PPO, PolicyGradient
from parl.utils import LinearDecayScheduler, calc_discount_sum_rewards

import gymnasium as gym
import numpy as np
import paddle
import paddle.nn.functional as F


class QuickStartModel(parl.Model):
    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.fc1 = paddle.nn.Linear(obs_dim, act_dim * 10)
        self.fc2 = paddle.nn.Linear(act_dim * 10, act_dim)

    def forward(self, x):
        return F.softmax(self.fc2(paddle.tanh(self.fc1(x))), axis=-1)


class QuickStartAgent(parl.Agent):
    def sample(self, obs):
        prob = self.alg.predict(paddle.to_tensor(obs, dtype="float32")).numpy()
        return int(np.random.choice(len(prob), 1, p=prob)[0])

    def predict(self, obs):
        prob = self.alg.predict(paddle.to_tensor(obs, dtype="float32"))
        return int(prob.argmax())

    def learn(self, obs, act, reward):
        act = paddle.to_tensor(np.expand_dims(act, axis=-1), dtype="int32")
        reward = paddle.to_tensor(np.expand_dims(reward, axis=-1), dtype="float32")
        loss = self.alg.learn(paddle.to_tensor(obs, dtype="float32"), act, reward)
        return float(loss)


def run_train_episode(agent: QuickStartAgent, env: gym.Env):
    obs_list, action_list, reward_list = [], [], []
    obs, _ = env.reset()
    done = False
    while not done:
        obs_list.append(obs)
        action = agent.sample(obs)
        action_list.append(action)
        obs, reward, terminated, truncated, _ = env.step(action)
        reward_list.append(reward)
        done = terminated or truncated
    return obs_list, action_list, reward_list


def test_quickstart_agent(tmp_path: Path) -> None:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    np.random.seed(0)
    model = QuickStartModel(obs_dim=4, act_dim=2)
    agent = QuickStartAgent(PolicyGradient(model, lr=1e-3))
    for _ in range(3):
        obs_list, action_list, reward_list = run_train_episode(agent, env)
        returns = calc_discount_sum_rewards(reward_list, 0.99)
        agent.learn(np.array(obs_list), np.array(action_list), returns)
    save_path = str(tmp_path / "model.ckpt")
    agent.save(save_path)

    restored = QuickStartAgent(PolicyGradient(QuickStartModel(4, 2), lr=1e-3))
    restored.restore(save_path)
    obs, _ = env.reset(seed=1)
    assert restored.predict(obs) == agent.predict(obs)

    params = agent.get_weights()
    assert sorted(params) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert params["fc1.weight"].shape == (4, 20)
    target = QuickStartAgent(PolicyGradient(QuickStartModel(4, 2), lr=1e-3))
    target.set_weights(agent.get_weights())
    model.set_weights(agent.alg.get_weights())
    np.testing.assert_array_equal(target.get_weights()["fc2.bias"], params["fc2.bias"])


class MujocoModel(parl.Model):
    """PARL's MuJoCo PPO model shape: a learned log-std parameter shaped [1, act_dim]."""

    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.body = paddle.nn.Sequential(paddle.nn.Linear(obs_dim, 64), paddle.nn.Tanh())
        self.fc_value, self.fc_pi = paddle.nn.Linear(64, 1), paddle.nn.Linear(64, act_dim)
        self.fc_pi_std = paddle.create_parameter(
            [1, act_dim], "float32", default_initializer=paddle.nn.initializer.Constant(0.0)
        )

    def value(self, obs):
        return self.fc_value(self.body(obs))

    def policy(self, obs):
        return self.fc_pi(self.body(obs)), paddle.exp(self.fc_pi_std)


class MujocoAgent(parl.Agent):
    def __init__(self, algorithm, initial_lr: float, num_updates: int) -> None:
        super().__init__(algorithm)
        self.lr_scheduler = LinearDecayScheduler(initial_lr, num_updates)

    def sample(self, obs):
        value, action, logp, entropy = self.alg.sample(paddle.to_tensor(obs))
        return value.numpy(), action.numpy()[0], logp.numpy()[0], entropy.numpy()

    def learn(self, obs, action, value, returns, logp, adv):
        lr = self.lr_scheduler.step(step_num=1)
        return self.alg.learn(obs, action, value, returns, logp, adv, lr), lr


def test_ppo_with_a_row_std_and_a_schedule_ending_at_zero() -> None:
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1")] * 2)
    obs, _ = envs.reset(seed=0)
    model = MujocoModel(3, 1)
    alg = PPO(model, clip_param=0.2, initial_lr=3e-4, continuous_action=True)
    agent = MujocoAgent(alg, initial_lr=3e-4, num_updates=2)
    rates = []
    for _ in range(2):
        rows = []
        for _ in range(8):
            value, action, logp, _ = agent.sample(obs.astype("float32"))
            obs, reward, _, _, _ = envs.step(np.clip(action, -2.0, 2.0))
            rows.append((obs, action, value, logp, reward.astype("float32")))
        b_obs, b_act, b_val, b_logp, b_rew = (np.concatenate(c) for c in zip(*rows, strict=True))
        losses, lr = agent.learn(
            b_obs.astype("float32"), b_act, b_val, b_rew, b_logp, b_rew - b_val
        )
        assert all(np.isfinite(losses))
        rates.append((lr, alg.optimizer.get_lr()))
    envs.close()
    assert rates[-1][0] == 0.0  # the schedule's last value, which PARL's `if lr:` skips
    assert rates[-1][1] == rates[0][1] > 0.0
