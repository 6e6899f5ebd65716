from __future__ import annotations

from typing import Any

from parl.env import (
    V_GYM_CHANGED,
    V_NPRANDOM_CHANGED,
    CompatWrapper,
    LegacyGymWrapper,
    VectorEnv,
    is_gym_version_ge,
)
from parl.utils import LegacyGymWrapper as UtilsLegacyGymWrapper

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env


class OldCountdown:
    """A gym<0.26-style env: counts down from 3; a time limit of 2 steps sets the info flag."""

    def __init__(self, time_limit: int | None = None, with_seed: bool = True) -> None:
        self.observation_space = gym.spaces.Box(0.0, 10.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.time_limit = time_limit
        self.seeds: list[int] = []
        self.closed = False
        if not with_seed:
            self.seed = None  # type: ignore[assignment]

    def seed(self, seed: int) -> list[int]:
        self.seeds.append(seed)
        return [seed]

    def reset(self) -> np.ndarray:
        self.count, self.steps = 3, 0
        return np.array([self.count], dtype=np.float32)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        self.count -= 1
        self.steps += 1
        info: dict[str, Any] = {}
        done = self.count == 0
        if self.time_limit is not None and self.steps >= self.time_limit and not done:
            done = True
            info["TimeLimit.truncated"] = True
        return np.array([self.count], dtype=np.float32), 1.0, done, info

    def close(self) -> None:
        self.closed = True


def test_legacy_wrapper_terminates() -> None:
    legacy = OldCountdown()
    env = LegacyGymWrapper(legacy)
    obs, info = env.reset(seed=7)
    assert legacy.seeds == [7] and info == {} and obs.tolist() == [3.0]
    results = [env.step(0) for _ in range(3)]
    assert [r[2:4] for r in results] == [(False, False), (False, False), (True, False)]
    env.close()
    assert legacy.closed


def test_legacy_wrapper_truncates_on_time_limit() -> None:
    env = LegacyGymWrapper(OldCountdown(time_limit=2))
    env.reset()
    env.step(0)
    _, _, terminated, truncated, info = env.step(0)
    assert (terminated, truncated) == (False, True)
    assert info["TimeLimit.truncated"] is True


def test_legacy_wrapper_passes_gymnasium_checker() -> None:
    check_env(LegacyGymWrapper(OldCountdown()), skip_render_check=True)


def test_legacy_wrapper_errors() -> None:
    with pytest.raises(TypeError, match="object has no 'reset'"):
        LegacyGymWrapper(object())  # type: ignore[arg-type]
    env = LegacyGymWrapper(OldCountdown())
    with pytest.raises(ValueError, match="takes no options"):
        env.reset(options={"difficulty": 2})
    unseedable = LegacyGymWrapper(OldCountdown(with_seed=False))
    with pytest.warns(UserWarning, match="no seed"):
        unseedable.reset(seed=1)


def test_legacy_wrapper_is_still_found_in_parl_utils() -> None:
    assert UtilsLegacyGymWrapper is LegacyGymWrapper


class Countdown(gym.Env):
    """Counts down from ``start``: terminates at 0; a TimeLimit can cut it first."""

    observation_space = gym.spaces.Box(0.0, 10.0, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, start: int = 3) -> None:
        self.start = start
        self.reset_seeds: list[int | None] = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.reset_seeds.append(seed)
        self.count = self.start
        return np.array([self.count], np.float32), {"reset": True}

    def step(self, action):
        self.count -= 1
        return (
            np.array([self.count], np.float32),
            1.0,
            self.count == 0,
            False,
            {"count": self.count},
        )


def countdown(start: int, time_limit: int | None = None) -> gym.Env:
    env: gym.Env = Countdown(start)
    if time_limit is not None:
        env = gym.wrappers.TimeLimit(env, time_limit)
    return env


def test_compat_wrapper_terminated_episode() -> None:
    env = CompatWrapper(countdown(2))
    obs = env.reset()
    assert obs.tolist() == [2.0]
    assert env.step(0) == (np.array([1.0]), 1.0, False, {"count": 1})
    _, _, done, info = env.step(0)
    assert done and info == {"count": 0, "TimeLimit.truncated": False}


def test_compat_wrapper_truncated_episode() -> None:
    env = CompatWrapper(countdown(5, time_limit=2))
    env.reset()
    assert env.step(1)[2] is False
    _, _, done, info = env.step(1)
    assert done is True and info["TimeLimit.truncated"] is True
    assert env._max_episode_steps == 2
    assert CompatWrapper(Countdown())._max_episode_steps is None


def test_compat_wrapper_seed_applies_to_the_next_reset_only() -> None:
    inner = Countdown()
    env = CompatWrapper(inner)
    assert env.seed(7) == [7]
    env.reset()
    env.reset()
    assert inner.reset_seeds == [7, None]
    env.reset(seed=3)
    assert inner.reset_seeds[-1] == 3


def test_compat_wrapper_bad_input() -> None:
    with pytest.raises(TypeError, match="CompatWrapper wraps a gymnasium.Env, got OldCountdown"):
        CompatWrapper(OldCountdown())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed must be an int or None, got 1.5"):
        CompatWrapper(Countdown()).seed(1.5)  # type: ignore[arg-type]


def test_is_gym_version_ge() -> None:
    assert (V_GYM_CHANGED, V_NPRANDOM_CHANGED) == ("0.26.0", "0.22.0")
    assert is_gym_version_ge(V_GYM_CHANGED) and is_gym_version_ge("1")
    assert not is_gym_version_ge("99.0")
    with pytest.raises(ValueError, match="compare_version must be a version string"):
        is_gym_version_ge("latest")
    with pytest.raises(ValueError, match="compare_version must be a version string"):
        is_gym_version_ge(26)  # type: ignore[arg-type]


def test_vector_env_resets_finished_envs() -> None:
    envs = VectorEnv([CompatWrapper(countdown(1)), CompatWrapper(countdown(3))])
    assert [obs.tolist() for obs in envs.reset()] == [[1.0], [3.0]]
    obs, rewards, dones, infos = envs.step([0, 0])
    assert [o.tolist() for o in obs] == [[1.0], [2.0]]  # env 0 ended and was reset
    assert rewards == [1.0, 1.0] and dones == [True, False]
    assert infos[0]["TimeLimit.truncated"] is False
    with pytest.raises(ValueError, match="one action per env: got 1 actions for 2 envs"):
        envs.step([0])
    with pytest.raises(ValueError, match="at least one env"):
        VectorEnv([])
    with pytest.raises(TypeError, match=r"envs\[1\] \(int\) has no reset"):
        VectorEnv([CompatWrapper(countdown(1)), 3])
