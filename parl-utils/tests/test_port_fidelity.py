"""PARL 2.x code, written from its documented API (parl-anchor §4), runs on parl.env/parl.utils.

Each test is a loop as PARL's examples write it, with ``import gym`` → ``import gymnasium as
gym`` the only change.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest


def test_parl_imports_resolve() -> None:
    from parl.env import (  # noqa: F401
        V_GYM_CHANGED,
        ActionMappingWrapper,
        CompatWrapper,
        VectorEnv,
        is_gym_version_ge,
    )
    from parl.env.atari_wrappers import wrap_deepmind  # noqa: F401
    from parl.env.compat_wrappers import CompatWrapper as Same
    from parl.env.continuous_wrappers import ActionMappingWrapper as SameMapping
    from parl.env.mujoco_wrappers import get_ob_rms, wrap_rms  # noqa: F401
    from parl.utils import (  # noqa: F401
        LinearDecayScheduler,
        PiecewiseScheduler,
        ReplayMemory,
        calc_gae,
        logger,
        summary,
    )

    assert Same is CompatWrapper and SameMapping is ActionMappingWrapper


def test_spaces_look_like_old_gym() -> None:
    from parl.env import CompatWrapper

    env = CompatWrapper(gym.make("FrozenLake-v1"))
    act_dim = env.action_space.n
    assert isinstance(act_dim, int) and act_dim == 4  # PARL's agents assert isinstance(.., int)
    assert isinstance(env.observation_space.n, int) and env.observation_space.n == 16
    assert env.action_space.contains(env.action_space.sample())
    assert env.action_space == gym.make("FrozenLake-v1").action_space


def run_train_episode(env, policy) -> tuple[float, int, dict]:
    """PARL's QuickStart/DQN episode loop: obs-only reset, 4-tuple step, stop on done."""
    obs = env.reset()
    total_reward, steps = 0.0, 0
    while True:
        action = policy(obs)
        obs, reward, done, info = env.step(action)
        total_reward += reward
        steps += 1
        if done:
            return total_reward, steps, info


def balance(obs: np.ndarray) -> int:
    return int(obs[2] + obs[3] > 0)  # push towards the side the pole falls to


def test_compat_wrapper_cartpole_loop() -> None:
    from parl.env import CompatWrapper

    env = CompatWrapper(gym.make("CartPole-v1"))
    env.seed(0)
    total, steps, info = run_train_episode(env, lambda obs: 0)
    assert total == steps < 20 and info["TimeLimit.truncated"] is False  # fell: terminated
    env = CompatWrapper(gym.make("CartPole-v1", max_episode_steps=50))
    env.seed(0)
    total, steps, info = run_train_episode(env, balance)
    assert total == steps == 50 and info["TimeLimit.truncated"] is True  # cut by time limit
    assert env._max_episode_steps == 50


def test_dqn_style_replay_memory_loop_and_file(tmp_path: Path) -> None:
    from parl.env import CompatWrapper
    from parl.utils import ReplayMemory

    env = CompatWrapper(gym.make("CartPole-v1"))
    env.seed(1)
    rpm = ReplayMemory(max_size=500, obs_dim=4, act_dim=0)
    rng = np.random.default_rng(0)
    while len(rpm) < 200:
        obs, done = env.reset(), False
        while not done:
            action = int(rng.integers(2))
            next_obs, reward, done, _ = env.step(action)
            rpm.append(obs, action, reward, next_obs, done)
            obs = next_obs
    batch_obs, _batch_action, batch_reward, _batch_next_obs, _batch_done = rpm.sample_batch(32)
    assert batch_obs.shape == (32, 4) and batch_reward.shape == (32,)
    rpm.save(tmp_path / "rpm.npz")
    restored = ReplayMemory(max_size=500, obs_dim=4, act_dim=0)
    restored.load(tmp_path / "rpm.npz")
    index = np.arange(len(rpm))
    for mine, theirs in zip(
        rpm.sample_batch_by_index(index), restored.sample_batch_by_index(index), strict=True
    ):
        np.testing.assert_array_equal(mine, theirs)
    # PARL 2.x's own save: the whole ring, discrete actions int32, other = int32 [size, pos].
    size, pos = len(rpm), rpm._curr_pos
    parl_action = np.zeros(500, np.int32)
    parl_action[:size] = rpm.action[:size]
    np.savez(
        tmp_path / "parl_rpm",
        obs=rpm.obs,
        action=parl_action,
        reward=rpm.reward,
        terminal=rpm.terminal,
        next_obs=rpm.next_obs,
        other=np.array([size, pos], dtype=np.int32),
    )
    from_parl = ReplayMemory(max_size=500, obs_dim=4, act_dim=0)
    from_parl.load(tmp_path / "parl_rpm.npz")
    np.testing.assert_array_equal(from_parl.sample_batch_by_index(index).obs, rpm.obs[:size])


def test_schedulers_as_parl_uses_them() -> None:
    from parl.utils import LinearDecayScheduler, PiecewiseScheduler

    num_updates = 7
    lr_scheduler = LinearDecayScheduler(3e-4, num_updates)
    lrs = [lr_scheduler.step(step_num=1) for _ in range(num_updates)]
    assert lrs[-1] == 0.0 and all(a > b for a, b in itertools.pairwise(lrs))
    assert lr_scheduler.step() == 0.0  # stays at 0 past max_steps
    entropy = PiecewiseScheduler([(0, -0.01), (20_000, -0.005)])
    assert entropy.step(step_num=19_999) == -0.01 and entropy.step(step_num=1) == -0.005


def test_ppo_mujoco_style_wrap_rms_loop() -> None:
    from parl.env.mujoco_wrappers import get_ob_rms, wrap_rms

    env = gym.make("Pendulum-v1")
    env = wrap_rms(env, 0.99)
    env.seed(616)
    assert env.reset().shape == (3,)  # obs only
    episode_rewards, bad_masks = [], []
    for _ in range(450):
        _, _, done, info = env.step(env.action_space.sample())
        if done:
            episode_rewards.append(info["episode"]["r"])
            env.reset()
        bad_masks.append(0.0 if "bad_transition" in info else 1.0)
    assert len(episode_rewards) == 2 and bad_masks.count(0.0) == 2
    ob_rms = get_ob_rms(env)
    eval_env = wrap_rms(gym.make("Pendulum-v1"), 0.99, test=True, ob_rms=ob_rms)
    eval_env.seed(617)
    eval_env.reset()
    rewards = []
    while len(rewards) < 1:
        _obs, _, done, info = eval_env.step(np.zeros(1, np.float32))
        if done:
            rewards.append(info["episode"]["r"])
    assert rewards[0] < 0


def test_vector_env_loop() -> None:
    from parl.env import CompatWrapper, VectorEnv

    envs = VectorEnv([CompatWrapper(gym.make("CartPole-v1")) for _ in range(3)])
    obs_list = envs.reset()
    dones = 0
    for _ in range(40):
        obs_list, _reward_list, done_list, _info_list = envs.step([0] * 3)
        dones += sum(done_list)
    assert len(obs_list) == 3 and dones >= 3  # always pushing left ends episodes quickly


def test_ddpg_style_action_mapping_over_compat_wrapper() -> None:
    """PARL's DDPG/TD3/SAC: ``ActionMappingWrapper(CompatWrapper(env))``, seed, time limit."""
    from parl.env import ActionMappingWrapper, CompatWrapper

    env = ActionMappingWrapper(CompatWrapper(gym.make("Pendulum-v1")))
    assert env.seed(3) == [3] and env._max_episode_steps == 200
    first = env.reset()
    env.seed(3)
    assert np.array_equal(env.reset(), first)  # the seed reached the env's reset
    episode_steps, done, terminals = 0, False, []
    while not done:
        _, _, done, _ = env.step(np.array([1.0], dtype=np.float32))  # maps to +2 torque
        episode_steps += 1
        terminals.append(float(done) if episode_steps < env._max_episode_steps else 0)
    assert episode_steps == 200 and not any(terminals)  # cut by the time limit: no terminal
    with pytest.raises(ValueError, match=r"outside \[-1, 1\]"):
        env.step(np.array([1.5]))


def test_action_mapping_reads_attributes_of_the_env_it_wraps() -> None:
    """PARL's own test env: a bare ``gym.Env`` with a ``_max_episode_steps`` attribute."""
    from parl.env import ActionMappingWrapper

    class Recorder(gym.Env):
        def __init__(self) -> None:
            self.action_space = gym.spaces.Box(low=-5.0, high=10.0, shape=(3,))
            self._max_episode_steps = 1000
            self.label = "recorder"

        def step(self, action):
            self.action = action

    env = ActionMappingWrapper(Recorder())
    env.step(np.array([-1.0, 0.0, 1.0]))
    assert list(env.unwrapped.action) == [-5.0, 2.5, 10.0]
    assert env._max_episode_steps == 1000 and env.label == "recorder"
    bare = ActionMappingWrapper(gym.make("Pendulum-v1"))
    with pytest.raises(AttributeError, match="'seed'.*nor has any env it wraps"):
        bare.seed(0)  # old gym's seed() comes with CompatWrapper; gymnasium seeds in reset
    assert bare._max_episode_steps == 200


def test_monitor_env_reports_each_finished_game_once() -> None:
    """PARL's A2C/IMPALA actors: ``get_wrapper_by_cls(env, MonitorEnv).next_episode_results()``."""
    from parl.env import CompatWrapper
    from parl.env.atari_wrappers import MonitorEnv, get_wrapper_by_cls

    env = CompatWrapper(MonitorEnv(gym.make("CartPole-v1")))
    env.seed(0)
    monitor = get_wrapper_by_cls(env, MonitorEnv)
    lengths = []
    for _ in range(3):
        _, steps, info = run_train_episode(env, lambda obs: 0)
        lengths.append(steps)
        assert info["episode"]["l"] == steps and info["episode"]["r"] == float(steps)
        env.reset()
    assert list(monitor.next_episode_results()) == [(float(n), n) for n in lengths]
    assert list(monitor.next_episode_results()) == []  # each game is reported once
    assert monitor.get_episode_rewards() == [float(n) for n in lengths]
    assert monitor.get_episode_lengths() == lengths
    assert monitor.get_total_steps() == sum(lengths)
