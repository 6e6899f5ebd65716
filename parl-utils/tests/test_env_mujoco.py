"""wrap_rms on a real continuous-control env (Pendulum-v1: same API as MuJoCo, no MuJoCo needed)."""

from __future__ import annotations

from parl.env.mujoco_wrappers import RunningMeanStd, get_ob_rms, wrap_rms

import gymnasium as gym
import numpy as np
import pytest


def play_episode(env, seed: int = 0) -> tuple[list[float], dict]:
    env.seed(seed)
    env.reset()
    env.action_space.seed(seed)
    rewards, done = [], False
    while not done:
        _, reward, done, info = env.step(env.action_space.sample())
        rewards.append(reward)
    return rewards, info


def test_wrap_rms_old_api_with_raw_episode_stats_and_bad_transition() -> None:
    env = wrap_rms(gym.make("Pendulum-v1"), gamma=0.99)
    rewards, info = play_episode(env)
    assert len(rewards) == 200  # Pendulum's time limit
    assert info["bad_transition"] is True and info["TimeLimit.truncated"] is True
    assert info["episode"]["l"] == 200
    # Rewards are normalised and clipped; the episode return is the raw one (Pendulum's are < 0).
    assert max(abs(r) for r in rewards) <= 10.0
    assert info["episode"]["r"] < -100 and not np.isclose(info["episode"]["r"], sum(rewards))


def test_wrap_rms_normalises_observations_with_shared_statistics() -> None:
    env = wrap_rms(gym.make("Pendulum-v1"), gamma=0.99)
    play_episode(env)
    ob_rms = get_ob_rms(env)
    assert isinstance(ob_rms, RunningMeanStd) and ob_rms.count > 200
    assert get_ob_rms(gym.wrappers.RecordEpisodeStatistics(gym.make("Pendulum-v1"))) is None

    test_env = wrap_rms(gym.make("Pendulum-v1"), None, test=True, ob_rms=ob_rms)
    assert get_ob_rms(test_env) is ob_rms  # shared, as in PARL: evaluation sees new statistics
    count = ob_rms.count
    test_env.seed(1)
    obs = test_env.reset()
    raw, _ = gym.make("Pendulum-v1").reset(seed=1)
    np.testing.assert_allclose(obs, (raw - ob_rms.mean) / np.sqrt(ob_rms.var + 1e-8), rtol=1e-5)
    _, reward, _, _ = test_env.step(np.zeros(1, np.float32))
    assert ob_rms.count == count  # frozen in test mode
    assert reward < -1e-3  # raw reward: not normalised in test mode

    env.eval()
    env.step(np.zeros(1, np.float32))
    assert get_ob_rms(env).count == count
    env.train()
    env.step(np.zeros(1, np.float32))
    assert get_ob_rms(env).count == count + 1


def test_an_evaluation_env_gets_its_statistics_later_as_in_parls_ppo_example() -> None:
    train_env = wrap_rms(gym.make("Pendulum-v1"), 0.99)
    train_env.reset()
    train_env.step(np.ones(1, np.float32))
    eval_env = wrap_rms(gym.make("Pendulum-v1"), 0.99, test=True)
    with pytest.raises(RuntimeError, match=r"no training statistics yet: call env.set_ob_rms"):
        eval_env.reset()
    eval_env.set_ob_rms(get_ob_rms(train_env))
    obs = eval_env.reset()
    assert get_ob_rms(eval_env) is get_ob_rms(train_env)
    count = get_ob_rms(train_env).count
    eval_env.step(np.zeros(1, np.float32))
    assert get_ob_rms(train_env).count == count  # frozen while evaluating
    assert obs.shape == (3,)


def test_wrap_rms_bad_input() -> None:
    with pytest.raises(ValueError, match=r"gamma in \[0, 1\] for training, got None"):
        wrap_rms(gym.make("Pendulum-v1"), None)
    with pytest.raises(ValueError, match=r"gamma in \[0, 1\] for training, got 1.5"):
        wrap_rms(gym.make("Pendulum-v1"), 1.5)
    with pytest.raises(TypeError, match="normalises Box observations"):
        wrap_rms(gym.make("FrozenLake-v1"), 0.99)
    env = wrap_rms(gym.make("Pendulum-v1"), 0.99)
    with pytest.raises(TypeError, match=r"ob_rms must have .mean and .var"):
        env.set_ob_rms([0.0, 1.0])  # type: ignore[arg-type]
