from __future__ import annotations

from typing import Any

from parl.utils import ActionMappingWrapper, LegacyGymWrapper

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


class BoxEnv(gym.Env):
    def __init__(self) -> None:
        self.action_space = gym.spaces.Box(
            low=np.array([0, -10], np.float32), high=np.array([1, 10], np.float32), dtype=np.float32
        )
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.last_action: np.ndarray | None = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.last_action = action
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_action_mapping_per_dimension() -> None:
    inner = BoxEnv()
    env = ActionMappingWrapper(inner)
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    env.reset()
    for action, expected in [([-1, -1], [0, -10]), ([1, 1], [1, 10]), ([0, 0.5], [0.5, 5.0])]:
        env.step(np.array(action, dtype=np.float32))
        np.testing.assert_allclose(inner.last_action, expected)
    env.step(np.array([1.0005, -1.0005]))
    np.testing.assert_allclose(inner.last_action, [1.0, -10.0])
    assert inner.last_action.dtype == np.float32


def test_action_mapping_errors() -> None:
    env = ActionMappingWrapper(BoxEnv())
    env.reset()
    with pytest.raises(ValueError, match=r"outside \[-1, 1\]"):
        env.step(np.array([0.0, 1.5]))
    with pytest.raises(ValueError, match=r"action has shape \(3,\), expected \(2,\)"):
        env.step(np.zeros(3))
    with pytest.raises(TypeError, match="needs a Box action space"):
        ActionMappingWrapper(LegacyGymWrapper(OldCountdown()))
    unbounded = BoxEnv()
    unbounded.action_space = gym.spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
    with pytest.raises(ValueError, match="needs finite bounds"):
        ActionMappingWrapper(unbounded)
