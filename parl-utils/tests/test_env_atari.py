"""wrap_deepmind on real ale-py games (ale-py ships the ROMs; OpenCV does the resizing)."""

from __future__ import annotations

import subprocess
import sys

from parl.env.atari_wrappers import (
    EpisodicLifeEnv,
    FireResetEnv,
    MonitorEnv,
    get_wrapper_by_cls,
    wrap_deepmind,
)

import ale_py
import gymnasium as gym
import numpy as np
import pytest

gym.register_envs(ale_py)


def test_training_env_shapes_clipped_rewards_and_lost_lives() -> None:
    env = wrap_deepmind(gym.make("BreakoutNoFrameskip-v4"), dim=42)
    assert env.observation_space.shape == (42, 42, 4)
    env.seed(0)
    obs = env.reset()
    assert obs.shape == (42, 42, 4) and obs.dtype == np.uint8
    env.action_space.seed(0)
    episode_ends, rewards = [], []
    for _ in range(3000):
        obs, reward, done, info = env.step(env.action_space.sample())
        rewards.append(reward)
        if done:
            episode_ends.append(("episode" in info, env.unwrapped.ale.lives()))
            if "episode" in info:
                break
            env.reset()
    assert set(rewards) <= {0.0, 1.0}
    # Breakout has 5 lives: each lost life ends an episode; only game over carries the stats.
    assert [has_stats for has_stats, _ in episode_ends] == [False] * 4 + [True]
    assert [lives for _, lives in episode_ends[:4]] == [4, 3, 2, 1]
    assert info["episode"]["r"] >= 0 and info["episode"]["l"] > len(rewards)  # raw frames
    assert get_wrapper_by_cls(env, EpisodicLifeEnv) is not None


def test_test_env_plays_whole_games_and_averages_them() -> None:
    env = wrap_deepmind(
        gym.make("ALE/Pong-v5", repeat_action_probability=0.0),
        obs_format="NCHW",
        test=True,
        test_episodes=2,
    )
    assert get_wrapper_by_cls(env, EpisodicLifeEnv) is None
    env.seed(0)
    assert env.reset().shape == (4, 84, 84)
    rewards, done, steps = [], False, 0
    while not done and steps < 5000:
        _, reward, done, info = env.step(0)  # NOOP: Pong's opponent wins 21:0 each game
        rewards.append(reward)
        steps += 1
    assert done, "two games of Pong did not end within 5000 steps"
    assert info["episode"]["returns"] == [-21.0, -21.0] and info["episode"]["r"] == -21.0
    assert sum(rewards) == -42.0  # raw, unclipped rewards of both games


def test_wrap_deepmind_bad_input() -> None:
    with pytest.raises(TypeError, match="CartPoleEnv is not an Atari env"):
        wrap_deepmind(gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match="dim must be an integer > 0, got 0"):
        wrap_deepmind(gym.make("PongNoFrameskip-v4"), dim=0)
    with pytest.raises(ValueError, match="obs_format must be 'NHWC' or 'NCHW', got 'CHW'"):
        wrap_deepmind(gym.make("PongNoFrameskip-v4"), obs_format="CHW")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="test_episodes must be an integer > 0, got 0"):
        wrap_deepmind(gym.make("PongNoFrameskip-v4"), test=True, test_episodes=0)


def test_atari_building_blocks_bad_input() -> None:
    with pytest.raises(TypeError, match="CartPoleEnv is not an Atari env"):
        EpisodicLifeEnv(gym.make("CartPole-v1"))
    with pytest.raises(TypeError, match="CartPoleEnv is not an Atari env"):
        FireResetEnv(gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match=r"needs FIRE as action 1, got actions \['NOOP', 'UP'"):
        FireResetEnv(gym.make("FreewayNoFrameskip-v4"))  # a game without FIRE


def test_parl_dqn_variant_evaluation_loop() -> None:
    """PARL's DQN_variant evaluates with ``get_real_done()`` and ``get_eval_rewards()``."""
    env = wrap_deepmind(
        gym.make("ALE/Pong-v5", repeat_action_probability=0.0), test=True, test_episodes=2
    )
    env.seed(0)
    env.reset()
    assert not env.get_real_done() and env.get_eval_rewards() is None
    steps = 0
    while not env.get_real_done() and steps < 5000:
        _, _, done, _ = env.step(0)  # NOOP: Pong's opponent wins 21:0 each game
        steps += 1
        if done:
            env.reset()
    assert env.get_real_done(), "two games of Pong did not end within 5000 steps"
    assert np.mean(env.get_eval_rewards()) == -21.0 and env.get_eval_rewards() == [-21.0] * 2
    env.reset()  # the next evaluation starts
    assert not env.get_real_done() and env.get_eval_rewards() is None


def test_monitor_env_of_wrap_deepmind_counts_whole_games() -> None:
    """PARL's A2C/IMPALA actors read whole-game results from the chain's MonitorEnv."""
    env = wrap_deepmind(gym.make("BreakoutNoFrameskip-v4"), dim=42)
    monitor = get_wrapper_by_cls(env, MonitorEnv)
    env.seed(0)
    env.reset()
    env.action_space.seed(0)
    info: dict = {}
    for _ in range(3000):
        _, _, done, info = env.step(env.action_space.sample())
        if done and "episode" in info:
            break
        if done:
            env.reset()  # a lost life: the game goes on
            assert list(monitor.next_episode_results()) == []
    assert list(monitor.next_episode_results()) == [(info["episode"]["r"], info["episode"]["l"])]


def test_importing_atari_wrappers_registers_the_games() -> None:
    """PARL's Atari examples call gym.make("PongNoFrameskip-v4") without importing ale_py."""
    code = (
        "import gymnasium as gym\n"
        "from parl.env.atari_wrappers import wrap_deepmind\n"
        "env = wrap_deepmind(gym.make('PongNoFrameskip-v4'))\n"
        "assert env.reset().shape == (84, 84, 4)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
