from __future__ import annotations

from parl.env import ActionMappingWrapper, CompatWrapper

import gymnasium as gym
import numpy as np
import pytest


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
        ActionMappingWrapper(gym.make("CartPole-v1"))
    unbounded = BoxEnv()
    unbounded.action_space = gym.spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
    with pytest.raises(ValueError, match="needs finite bounds"):
        ActionMappingWrapper(unbounded)


def test_action_mapping_inside_or_outside_compat_wrapper() -> None:
    for env in (
        CompatWrapper(ActionMappingWrapper(gym.make("Pendulum-v1"))),
        ActionMappingWrapper(CompatWrapper(gym.make("Pendulum-v1"))),
    ):
        env.reset()
        obs, _, done, _ = env.step(np.array([1.0], np.float32))
        assert obs.shape == (3,) and isinstance(done, bool)
