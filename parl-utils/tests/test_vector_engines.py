"""Vector envs of both engines with the collector's same-step autoreset (parl.env.vector_engines).

SameStepAutoreset is checked against gymnasium's own SAME_STEP vector env (the same seeds give
the same transitions, step for step); EnvPool's engine where EnvPool is installed (the
``[envpool]`` extra, not in the test sessions: it brings 600 MB of assets).
"""

from __future__ import annotations

import sys

from parl.env import make_vector_env as env_make_vector_env
from parl.env.vector_engines import SameStepAutoreset, reset_by_mask
from parl.utils import RolloutCollector, make_vector_env

import gymnasium as gym
import numpy as np
import pytest

STEPS = 120  # CartPole with fixed actions: episodes of 9 to 50 steps, several per env


def actions(t: int, num_envs: int) -> np.ndarray:
    return np.array([(t // 3 + i) % 2 for i in range(num_envs)])


def test_same_step_autoreset_gives_gymnasiums_same_step_transitions() -> None:
    ours = SameStepAutoreset(
        gym.vector.SyncVectorEnv(
            [lambda: gym.make("CartPole-v1")] * 3,
            autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
        ),
        reset_by_mask,
    )
    theirs = make_vector_env("CartPole-v1", 3)
    assert ours.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    np.testing.assert_array_equal(ours.reset(seed=5)[0], theirs.reset(seed=5)[0])
    ended = 0
    for t in range(STEPS):
        obs, rewards, terms, truncs, infos = ours.step(actions(t, 3))
        expected = theirs.step(actions(t, 3))
        for got, want in zip((obs, rewards, terms, truncs), expected[:4], strict=True):
            np.testing.assert_array_equal(got, want)
        if "final_obs" in expected[4]:
            mask = expected[4]["_final_obs"]
            np.testing.assert_array_equal(infos["_final_obs"], mask)
            np.testing.assert_array_equal(
                np.stack(infos["final_obs"][mask]), np.stack(expected[4]["final_obs"][mask])
            )
            ended += int(mask.sum())
    assert ended >= 5


def test_same_step_autoreset_refuses_an_env_that_needs_none() -> None:
    with pytest.raises(ValueError, match="a SAME_STEP env needs no wrapper"):
        SameStepAutoreset(make_vector_env("CartPole-v1", 2), reset_by_mask)


def test_make_vector_env_refuses_what_an_engine_does_not_have() -> None:
    with pytest.raises(ValueError, match="engine must be 'gymnasium' or 'envpool', got 'gym'"):
        make_vector_env("CartPole-v1", 2, engine="gym")
    with pytest.raises(ValueError, match="builds its envs by id"):
        make_vector_env(lambda: gym.make("CartPole-v1"), 2, engine="envpool")
    with pytest.raises(ValueError, match="no asynchronous=True"):
        make_vector_env("CartPole-v1", 2, engine="envpool", asynchronous=True)


def test_gymnasium_seed_seeds_the_envs_now() -> None:
    first, second = (make_vector_env("CartPole-v1", 2, seed=3) for _ in range(2))
    step = [envs.step(np.array([0, 1]))[0] for envs in (first, second)]
    np.testing.assert_array_equal(step[0], step[1])
    assert env_make_vector_env is make_vector_env  # parl.env's is parl.utils'


def test_envpool_missing_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "envpool", None)  # what import sees without it
    with pytest.raises(ImportError, match=r'pip install "parl-utils\[envpool\]"'):
        make_vector_env("CartPole-v1", 2, engine="envpool")


def test_envpool_collects_real_transitions() -> None:
    """EnvPool resets in the next step (a step of reward 0 that is no transition); through the
    engine every CartPole step is real (reward 1), and a finished episode's next_obs is its
    final observation, past the pole's limits, not the next episode's first."""
    pytest.importorskip("envpool", reason="the [envpool] extra is not installed")
    collector = RolloutCollector(make_vector_env("CartPole-v1", 4, engine="envpool", seed=0))
    assert collector.obs.shape == (4, 4)
    ended = 0
    for t in range(STEPS):
        step = collector.step(actions(t, 4))
        np.testing.assert_array_equal(step.rewards, np.ones(4))
        done = step.dones
        if done.any():
            ended += int(done.sum())
            final = step.next_obs[done]
            out = (np.abs(final[:, 0]) > 2.4) | (np.abs(final[:, 2]) > 0.2095)
            assert out.all(), final
            # The next episode starts near the origin (CartPole's reset: all within ±0.05).
            assert (np.abs(collector.obs[done]) <= 0.05).all()
    episodes = collector.pop_episodes()
    assert len(episodes) == ended >= 10
    assert all(9 <= episode.episodic_length < 100 for episode in episodes)
    assert [e.episodic_return for e in episodes] == [float(e.episodic_length) for e in episodes]
    with pytest.raises(ValueError, match="EnvPool has no task 'NoSuchTask-v0'"):
        make_vector_env("NoSuchTask-v0", 2, engine="envpool")
