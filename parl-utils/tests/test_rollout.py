"""RolloutCollector and evaluate on real gymnasium vector envs (SyncVectorEnv, SAME_STEP)."""

from __future__ import annotations

from pathlib import Path

from parl.utils import (
    Episode,
    ReplayMemory,
    RolloutCollector,
    compute_gae,
    evaluate,
    make_vector_env,
    summary,
)

import gymnasium as gym
import numpy as np
import pytest


class Ticker(gym.Env):
    """obs = [steps so far, episodes so far]; reward = steps so far; terminates at ``end``."""

    observation_space = gym.spaces.Box(0.0, 1e6, shape=(2,), dtype=np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, end: int | None) -> None:
        self.end = end
        self.episodes = -1

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps, self.episodes = 0, self.episodes + 1
        return self._obs(), {}

    def step(self, action):
        self.steps += 1
        terminated = self.end is not None and self.steps >= self.end
        return self._obs(), float(self.steps), terminated, False, {}

    def _obs(self) -> np.ndarray:
        return np.array([self.steps, self.episodes], np.float32)


def ticker(end: int | None, limit: int | None = None, record: bool = False):
    def make() -> gym.Env:
        env: gym.Env = Ticker(end)
        if limit is not None:
            env = gym.wrappers.TimeLimit(env, limit)
        if record:
            env = gym.wrappers.RecordEpisodeStatistics(env)
        return env

    return make


def vector(*factories, autoreset=gym.vector.AutoresetMode.SAME_STEP) -> gym.vector.VectorEnv:
    return gym.vector.SyncVectorEnv(list(factories), autoreset_mode=autoreset)


def test_step_gives_real_transitions_with_final_observations() -> None:
    # env 0 terminates after 2 steps, env 1 is truncated by its time limit after 3.
    collector = RolloutCollector(vector(ticker(2), ticker(None, limit=3)), seed=0)
    steps = [collector.step(np.zeros(2, np.int64)) for _ in range(3)]
    np.testing.assert_array_equal(steps[1].terminations, [True, False])
    np.testing.assert_array_equal(steps[2].truncations, [False, True])
    np.testing.assert_array_equal(steps[2].dones, [False, True])
    # next_obs is where the action led: the final observation of an episode that ended...
    np.testing.assert_array_equal(steps[1].next_obs[0], [2, 0])
    np.testing.assert_array_equal(steps[2].next_obs[1], [3, 0])
    # ...while the collector moved on to the first observation of the next episode.
    np.testing.assert_array_equal(steps[2].obs[0], [0, 1])
    np.testing.assert_array_equal(collector.obs[1], [0, 1])
    np.testing.assert_array_equal(steps[1].obs, steps[0].next_obs)
    assert collector.env_steps == 6
    assert collector.pop_episodes() == [Episode(3.0, 2, 4), Episode(6.0, 3, 6)]
    assert collector.pop_episodes() == []


class RandomEnd(gym.Env):
    """obs = [episode id, step]; terminates with probability 0.15 per step."""

    observation_space = gym.spaces.Box(0.0, np.inf, shape=(2,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.episode = -1.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1.0, 0.0
        return np.array([self.episode, self.t], np.float32), {}

    def step(self, action):
        self.t += 1.0
        terminated = bool(self.np_random.random() < 0.15)
        return np.array([self.episode, self.t], np.float32), 1.0, terminated, False, {}


def test_no_stored_transition_crosses_an_episode_boundary() -> None:
    """Off-policy use: every step goes to the replay memory, episode ends of both kinds."""
    envs = vector(*[lambda: gym.wrappers.TimeLimit(RandomEnd(), max_episode_steps=5)] * 3)
    collector = RolloutCollector(envs, seed=0)
    rpm = ReplayMemory(1_000, obs_dim=2, act_dim=0, seed=0)
    truncations = terminations = 0
    for _ in range(200):
        step = collector.step(np.zeros(3, dtype=np.int64))
        rpm.append_batch(step.obs, step.actions, step.rewards, step.next_obs, step.terminations)
        truncations += int((step.truncations & ~step.terminations).sum())
        terminations += int(step.terminations.sum())
    assert truncations > 0 and terminations > 0  # both kinds of episode end were exercised
    assert len(rpm) == 600 == collector.env_steps
    obs, _, reward, next_obs, terminal = rpm.sample_batch_by_index(np.arange(len(rpm)))
    np.testing.assert_array_equal(next_obs[:, 0], obs[:, 0])  # same episode
    np.testing.assert_array_equal(next_obs[:, 1], obs[:, 1] + 1)  # consecutive steps
    assert np.all(reward == 1.0)
    # A time-limit truncation (step 5 without termination) is stored as non-terminal.
    assert terminal.sum() == terminations
    assert np.any((next_obs[:, 1] == 5) & ~terminal)


def test_rollout_layout_extras_and_episode_starts() -> None:
    collector = RolloutCollector(vector(ticker(2), ticker(None, limit=3)), seed=0)

    def policy(obs: np.ndarray):
        return obs[:, 0].astype(np.int64) % 3, {"value": obs[:, 0] * 10, "logprob": -obs[:, 1]}

    rollout = collector.rollout(policy, 4)
    assert rollout.obs.shape == (4, 2, 2) and rollout.obs.dtype == np.float32
    np.testing.assert_array_equal(rollout.obs[:, 0, 0], [0, 1, 0, 1])
    np.testing.assert_array_equal(rollout.actions[:, 1], [0, 1, 2, 0])
    np.testing.assert_array_equal(rollout.extras["value"][:, 1], [0, 10, 20, 0])
    np.testing.assert_array_equal(rollout.rewards[:, 0], [1, 2, 1, 2])
    np.testing.assert_array_equal(rollout.terminations[:, 0], [False, True, False, True])
    np.testing.assert_array_equal(rollout.truncations[:, 1], [False, False, True, False])
    # dones[t]: obs[t] starts a new episode (compute_gae's convention).
    np.testing.assert_array_equal(rollout.dones[:, 0], [0, 0, 1, 0])
    np.testing.assert_array_equal(rollout.dones[:, 1], [0, 0, 0, 1])
    np.testing.assert_array_equal(rollout.next_dones, [1, 0])
    np.testing.assert_array_equal(rollout.next_obs, collector.obs)
    assert rollout.flatten(rollout.obs).shape == (8, 2)
    # Only the truncated step needs a bootstrap: its final observation is [3, 0].
    np.testing.assert_array_equal(rollout.final_obs, [[3, 0]])
    np.testing.assert_array_equal(np.argwhere(rollout.bootstrap_mask), [[2, 1]])


def test_bootstrapped_rewards_call_the_value_function_once() -> None:
    collector = RolloutCollector(vector(ticker(None, limit=2), ticker(None, limit=3)), seed=0)
    rollout = collector.rollout(lambda obs: np.zeros(2, np.int64), 6)
    calls = []

    def value_fn(obs: np.ndarray) -> np.ndarray:
        calls.append(obs.copy())
        return obs[:, 0] * 100.0

    rewards = rollout.bootstrapped_rewards(value_fn, gamma=0.5)
    assert len(calls) == 1 and len(calls[0]) == 5  # env 0 truncates 3 times, env 1 twice
    expected = rollout.rewards.copy()
    expected[rollout.bootstrap_mask] += 0.5 * 100.0 * rollout.final_obs[:, 0]
    np.testing.assert_allclose(rewards, expected)
    np.testing.assert_array_equal(rollout.rewards[1, 0], 2.0)  # the rollout itself is unchanged
    # With no truncation the value function is not called at all.
    short = collector.rollout(lambda obs: np.zeros(2, np.int64), 1)
    assert not short.bootstrap_mask.any()
    no_calls = short.bootstrapped_rewards(value_fn, 0.9)
    assert len(calls) == 1
    np.testing.assert_array_equal(no_calls, short.rewards)
    with pytest.raises(ValueError, match="returned 1 values for 5 final observations"):
        rollout.bootstrapped_rewards(lambda obs: np.zeros(1), gamma=0.5)


def test_bootstrapped_rollout_matches_an_untruncated_episode() -> None:
    """GAE over a time-limited rollout, bootstrapped, equals GAE over the same steps uncut."""
    gamma, lam = 0.9, 0.8

    def value(obs: np.ndarray) -> np.ndarray:
        return obs[..., 0] * 0.5

    cut = RolloutCollector(vector(ticker(None, limit=3)), seed=0).rollout(
        lambda obs: np.zeros(1, np.int64), 3
    )
    whole = RolloutCollector(vector(ticker(None)), seed=0).rollout(
        lambda obs: np.zeros(1, np.int64), 4
    )
    values = value(cut.obs)
    adv_cut, _ = compute_gae(
        cut.bootstrapped_rewards(value, gamma),
        values,
        cut.dones,
        value(cut.next_obs),
        cut.next_dones,
        gamma,
        lam,
    )
    # The uncut episode continues from [3, 0]; with lam folded into the last step it is the
    # same as GAE over 3 steps bootstrapped from V([3, 0]) (no episode end).
    adv_whole, _ = compute_gae(
        whole.rewards[:3],
        value(whole.obs[:3]),
        whole.dones[:3],
        value(whole.obs[3]),
        np.zeros(1),
        gamma,
        lam,
    )
    np.testing.assert_allclose(adv_cut, adv_whole, rtol=1e-6)


def test_raw_episode_statistics_come_from_record_episode_statistics() -> None:
    def scaled() -> gym.Env:
        env = ticker(2, record=True)()
        return gym.wrappers.TransformReward(env, lambda r: r * 0.01)  # e.g. normalisation

    collector = RolloutCollector(vector(scaled, ticker(2)), seed=0)
    rollout = collector.rollout(lambda obs: np.zeros(2, np.int64), 2)
    np.testing.assert_allclose(rollout.rewards[:, 0], [0.01, 0.02])
    episodes = collector.pop_episodes()
    assert [e.episodic_return for e in episodes] == [3.0, 3.0]  # raw for env 0, summed for env 1


def test_log_episodes_writes_the_fixed_metric_names(tmp_path: Path) -> None:
    summary.set_logdir(tmp_path)
    collector = RolloutCollector(make_vector_env(lambda: ticker(2)(), 2), seed=0)
    collector.rollout(lambda obs: np.zeros(2, np.int64), 3)
    assert collector.sps > 0
    logged = collector.log_episodes()
    summary.close()
    assert len(logged) == 2 and collector.pop_episodes() == []
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    assert "4,charts/episodic_return,3.0" in rows and "4,charts/episodic_length,2.0" in rows


def test_evaluate_shares_episodes_out_and_uses_raw_returns() -> None:
    envs = make_vector_env(lambda: ticker(3, record=True)(), 3)
    calls = []

    def policy(obs: np.ndarray) -> np.ndarray:
        calls.append(len(obs))
        return np.zeros(len(obs), np.int64)

    result = evaluate(envs, policy, 4, seed=1)
    np.testing.assert_array_equal(result.returns, [6.0] * 4)
    np.testing.assert_array_equal(result.lengths, [3] * 4)
    assert result.mean_return == 6.0 and calls == [3] * 6  # env 2 plays 2 episodes
    assert result.metrics() == {"eval/episodic_return": 6.0, "eval/episodic_length": 3.0}


def test_evaluate_on_cartpole_with_a_trivial_policy() -> None:
    envs = make_vector_env("CartPole-v1", 2)
    result = evaluate(envs, lambda obs: np.zeros(len(obs), np.int64), 3, seed=0)
    assert len(result.returns) == 3
    assert all(5 <= r <= 20 for r in result.returns)  # always pushing left fails fast
    np.testing.assert_array_equal(result.returns, result.lengths)  # reward 1 per step


def test_async_vector_env_in_subprocesses_matches_sync() -> None:
    results = []
    for asynchronous in (False, True):
        envs = make_vector_env("CartPole-v1", 2, asynchronous=asynchronous)
        try:
            collector = RolloutCollector(envs, seed=0)
            rollout = collector.rollout(lambda obs: np.zeros(2, np.int64), 20)
            results.append((rollout, collector.pop_episodes()))
        finally:
            envs.close()
    (sync, sync_episodes), (async_, async_episodes) = results
    assert sync_episodes == async_episodes and len(sync_episodes) >= 2
    np.testing.assert_array_equal(sync.obs, async_.obs)
    np.testing.assert_array_equal(sync.terminations, async_.terminations)


def test_bad_input() -> None:
    next_step = vector(ticker(2), autoreset=gym.vector.AutoresetMode.NEXT_STEP)
    with pytest.raises(ValueError, match=r"autoreset_mode=AutoresetMode.NEXT_STEP.*SAME_STEP"):
        RolloutCollector(next_step)
    with pytest.raises(ValueError, match="evaluate needs a vector env that resets"):
        evaluate(next_step, lambda obs: obs, 1)
    with pytest.raises(TypeError, match="needs a gymnasium vector env, got CartPoleEnv"):
        RolloutCollector(gym.make("CartPole-v1").unwrapped)  # type: ignore[arg-type]
    collector = RolloutCollector(make_vector_env(lambda: ticker(2)(), 1))
    with pytest.raises(ValueError, match="num_steps must be an integer > 0, got 0"):
        collector.rollout(lambda obs: np.zeros(1, np.int64), 0)
    with pytest.raises(TypeError, match=r"not \(actions, extras_dict\)"):
        collector.rollout(lambda obs: (np.zeros(1, np.int64), 1.0, 2.0), 2)
    with pytest.raises(ValueError, match="num_episodes must be an integer > 0, got -1"):
        evaluate(make_vector_env("CartPole-v1", 1), lambda obs: obs, -1)
    with pytest.raises(ValueError, match="num_envs must be an integer > 0, got 0"):
        make_vector_env("CartPole-v1", 0)
    with pytest.raises(TypeError, match="make_env must be a gymnasium id or a function"):
        make_vector_env(3, 1)  # type: ignore[arg-type]
