"""parl.env.multiagent_env on the real particle environments of mpe2."""

from __future__ import annotations

from parl.env.multiagent_env import SCENARIOS, MAenv, ParallelEnvAdapter, ParticleEnv

import gymnasium as gym
import numpy as np
import pytest
from mpe2 import simple_spread_v3
from pettingzoo.utils.wrappers import BaseParallelWrapper


class _Dies(BaseParallelWrapper):
    """simple_spread where ``victim`` leaves the episode (terminated) at step ``at``: MPE agents
    never die, so the death is staged around the real env, as PettingZoo envs report one."""

    def __init__(self, env, victim: str, at: int) -> None:
        super().__init__(env)
        self.victim, self.at, self.steps = victim, at, 0

    def reset(self, seed=None, options=None):
        self.steps = 0
        self.agents = list(self.env.possible_agents)
        return self.env.reset(seed=seed, options=options)

    def step(self, actions):
        assert self.steps < self.at or self.victim not in actions, "a dead agent acted"
        self.steps += 1
        obs, rew, term, trunc, info = self.env.step({self.victim: 0, **actions})
        if self.steps == self.at:
            term[self.victim] = True
        elif self.steps > self.at:
            for table in (obs, rew, term, trunc, info):
                table.pop(self.victim, None)
        self.agents = [a for a in self.env.agents if self.steps < self.at or a != self.victim]
        return obs, rew, term, trunc, info


def test_spread_spaces_follow_parl():
    env = ParticleEnv("simple_spread")
    assert env.agents_name == ["agent_0", "agent_1", "agent_2"]
    assert (env.n, env.obs_shape_n, env.act_shape_n) == (3, [18, 18, 18], [5, 5, 5])
    assert all(isinstance(space, gym.spaces.Discrete) for space in env.action_space)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before state\(\)"):
        env.state()
    env.reset(seed=0)
    assert env.state().shape == env.state_space.shape == (54,)


def test_every_parl_scenario_builds_and_steps():
    for name in SCENARIOS:
        env = ParticleEnv(name)
        obs_n, _info_n = env.reset(seed=0)
        assert [o.shape[0] for o in obs_n] == env.obs_shape_n, name
        obs_n, reward_n, terminated_n, truncated_n, _ = env.step([0] * env.n)
        assert len(reward_n) == env.n and not any(terminated_n) and not any(truncated_n)


def test_episode_ends_in_truncation_after_max_cycles():
    env = ParticleEnv("simple_spread", max_cycles=4)
    env.reset(seed=0)
    ends = [env.step([1, 2, 3])[2:4] for _ in range(4)]
    assert [any(truncated) for _, truncated in ends] == [False, False, False, True]
    assert not any(any(terminated) for terminated, _ in ends)
    assert env.alive == [False] * 3


def test_same_seed_same_episode_and_onehot_actions_are_argmaxed():
    first, second = ParticleEnv("simple_spread"), ParticleEnv("simple_spread")
    a = first.reset(seed=3)[0]
    b = second.reset(seed=3)[0]
    np.testing.assert_array_equal(np.stack(a), np.stack(b))
    onehot = np.eye(5, dtype=np.float32)[[1, 2, 3]]
    np.testing.assert_array_equal(
        np.stack(first.step([1, 2, 3])[0]), np.stack(second.step(list(onehot))[0])
    )


def test_continuous_actions_are_mapped_from_minus_one_one():
    env = ParticleEnv("simple_spread", continuous_actions=True)
    assert env.act_shape_n == [5, 5, 5]
    env.reset(seed=0)
    zero = np.zeros(5, np.float32)
    env.step([zero, zero, zero])
    assert env._env_action(0, -np.ones(5)).tolist() == [0.0] * 5
    with pytest.raises(ValueError, match=r"agent agent_1 needs an action of shape \(5,\) in"):
        env.step([zero, zero + 2.0, zero])


def test_a_dead_agent_gets_zeros_and_no_more_actions():
    env = ParallelEnvAdapter(_Dies(simple_spread_v3.parallel_env(max_cycles=10), "agent_1", 2))
    env.reset(seed=0)
    env.step([0, 0, 0])
    terminated_n = env.step([0, 0, 0])[2]
    assert terminated_n == [False, True, False] and env.alive == [True, False, True]
    obs_n, reward_n, terminated_n, truncated_n, info_n = env.step([0, 0, 0])
    assert not obs_n[1].any() and reward_n[1] == 0.0 and terminated_n[1] and not truncated_n[1]
    assert [info["alive"] for info in info_n] == [True, False, True]
    assert obs_n[0].any() and not terminated_n[0]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="unknown particle scenario 'simple_sprad'; choose one"):
        ParticleEnv("simple_sprad")
    env = ParticleEnv("simple")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"one action per agent \(1: \['agent_0'\]\), got 2"):
        env.step([0, 0])
    with pytest.raises(ValueError, match="no possible_agents"):
        ParallelEnvAdapter(object())


def test_team_env_evaluates_a_team_with_the_single_agent_tools():
    from parl.env.multiagent_env import TeamEnv
    from parl.utils import evaluate, make_vector_env

    envs = make_vector_env(lambda: TeamEnv(ParticleEnv("simple_spread", max_cycles=5)), 2)
    obs, _ = envs.reset(seed=0)
    assert len(obs) == 3 and obs[0].shape == (2, 18)  # per agent, batched over the sub-envs
    always_noop = lambda obs: tuple(np.zeros(len(o), np.int64) for o in obs)  # noqa: E731
    result = evaluate(envs, always_noop, 4, seed=0)
    assert list(result.lengths) == [5, 5, 5, 5] and (result.returns < 0).all()

    team, single = TeamEnv(ParticleEnv("simple_spread")), ParticleEnv("simple_spread")
    team.reset(seed=1), single.reset(seed=1)
    _, reward, terminated, truncated, _ = team.step((1, 2, 3))
    assert reward == pytest.approx(sum(single.step([1, 2, 3])[1]))
    assert not terminated and not truncated


def test_maenv_keeps_parl_2_call_shapes_and_attributes():
    env, twin = MAenv("simple_spread", max_cycles=3), ParticleEnv("simple_spread", max_cycles=3)
    assert (env.n, env.agents_name, env.obs_shape_n, env.act_shape_n) == (
        twin.n,
        twin.agents_name,
        twin.obs_shape_n,
        twin.act_shape_n,
    )
    assert env.action_space == twin.action_space and not env.continuous_actions
    obs_n = env.reset(seed=2)  # PARL: reset() gives obs_n alone
    assert isinstance(obs_n, list) and len(obs_n) == 3
    np.testing.assert_array_equal(np.stack(obs_n), np.stack(twin.reset(seed=2)[0]))
    onehot = list(np.eye(5, dtype=np.float32)[[1, 2, 3]])  # PARL's MADDPG acts with vectors
    steps = [env.step(onehot) for _ in range(3)]
    assert all(len(step) == 4 for step in steps)  # obs_n, reward_n, done_n, info_n
    assert [all(done_n) for _, _, done_n, _ in steps] == [False, False, True]
    assert [info["TimeLimit.truncated"] for info in steps[-1][3]] == [True] * 3
    twin_steps = [twin.step([1, 2, 3]) for _ in range(3)]
    np.testing.assert_array_equal(np.stack(steps[-1][0]), np.stack(twin_steps[-1][0]))
    assert steps[-1][1] == twin_steps[-1][1]
    with pytest.raises(ValueError, match="unknown particle scenario 'simple_sprad'"):
        MAenv("simple_sprad")
    env.close()


def test_padded_observations_let_one_network_see_agents_that_observe_differently():
    plain = ParticleEnv("simple_speaker_listener")
    padded = ParticleEnv("simple_speaker_listener", pad_observations=True)
    assert plain.obs_shape_n == [3, 11] and padded.obs_shape_n == [11, 11]
    assert [space.shape for space in padded.observation_space] == [(11,), (11,)]
    (own_n, _), (obs_n, _) = plain.reset(seed=0), padded.reset(seed=0)
    for own, obs, space in zip(own_n, obs_n, padded.observation_space, strict=True):
        np.testing.assert_array_equal(obs[: own.shape[0]], own)
        assert not obs[own.shape[0] :].any() and space.contains(obs)
    own_n, obs_n = plain.step([1, 2])[0], padded.step([1, 2])[0]
    np.testing.assert_array_equal(obs_n[0][:3], own_n[0])
    np.testing.assert_array_equal(padded.state(), plain.state())  # the state is unpadded
    same = ParticleEnv("simple_spread", pad_observations=True)
    assert same.obs_shape_n == [18, 18, 18]


def test_agents_of_different_sizes_get_ids_and_their_available_actions():
    from parl.env.multiagent_env import with_agent_ids

    env = ParticleEnv("simple_speaker_listener", pad_observations=True)
    np.testing.assert_array_equal(env.available_actions(), [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    obs_n, _ = env.reset(seed=0)
    team = with_agent_ids(np.stack(obs_n))
    assert team.shape == (2, 13) and team.dtype == np.float32
    np.testing.assert_array_equal(team[:, 11:], np.eye(2))
    batched = with_agent_ids(np.zeros((4, 2, 11)))
    np.testing.assert_array_equal(batched[3, :, 11:], np.eye(2))
    with pytest.raises(ValueError, match="available_actions needs Discrete action spaces"):
        ParticleEnv("simple_spread", continuous_actions=True).available_actions()
