"""The Decision Transformer through the contract suite, and what only it has: segments with
returns-to-go, return conditioning, the agent's history."""

from __future__ import annotations

import functools
from typing import ClassVar

import parl
from parl.testing import AlgorithmContract, BadInput, IdentityEnvBox, identity_score
from parl.utils import make_vector_env
from parl.utils.offline import collect, concatenate

import gymnasium as gym
import numpy as np
import pydantic
import pytest

from parl_algos_ac import (
    DecisionTransformerModel,
    DTAgent,
    ReturnConditioning,
    TrajectorySegments,
)

K = 4


@functools.cache
def identity_segments() -> TrajectorySegments:
    """Segments of an identity-task dataset: 50 episodes of 20 steps with uniformly random
    actions (returns near -13), 50 with the observation plus a little noise (near -0.2)."""
    envs = lambda: make_vector_env(lambda: IdentityEnvBox(1, episode_length=20), 1)  # noqa: E731
    rng = np.random.default_rng(0)
    random = collect(envs(), lambda obs: rng.uniform(-1, 1, obs.shape), 1000, seed=0)
    noisy = collect(
        envs(), lambda obs: np.clip(obs + rng.normal(0, 0.1, obs.shape), -1, 1), 1000, seed=1
    )
    data = concatenate([random, noisy])
    return TrajectorySegments(data, context_length=K, seed=0, max_episode_steps=20)


def conditioned_env(target_return: float = 0.0) -> ReturnConditioning:
    return ReturnConditioning(IdentityEnvBox(1, episode_length=20), target_return)


class TestDTContract(AlgorithmContract):
    """DT learns the identity task from the dataset, asked for the best return (0).

    Cloning the whole dataset would predict about half the observation (the random half's
    actions average 0) and score near -0.08; conditioning on return 0 picks the near-optimal
    episodes. Dropout 0, so that paddle and torch draw nothing and can be compared.
    """

    algorithm_name = "DT"
    backends = ("paddle", "torch")
    action_kind = "continuous"
    solved_score = -0.02
    train_steps = 600
    short_train_steps = 10
    options: ClassVar[dict] = {
        "lr": 1e-3,
        "warmup_steps": 20,
        "weight_decay": 1e-4,
        "return_scale": 10.0,
    }

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        model = DecisionTransformerModel(
            1,
            1,
            embed_dim=32,
            num_layers=1,
            max_episode_steps=20,
            dropout=0.0,
            backend=self.backend,
        )
        segments = identity_segments()
        algorithm = self.algorithm_class(model, **{**self.options, **config})
        return DTAgent(algorithm, K, segments.obs_mean, segments.obs_std)

    def make_env(self):
        return conditioned_env()

    def learn_batch(self, agent, rng):
        return agent.learn(*identity_segments().sample(32, rng))

    def explore(self, agent, obs):
        return agent.sample(obs)

    def bad_inputs(self, agent):
        batch = identity_segments().sample(3, np.random.default_rng(0))
        yield from (
            BadInput(
                "states of another obs_dim",
                lambda: agent.learn(np.zeros((3, K, 2)), *batch[1:]),
                ValueError,
                r"states must be \[3, 4, 1\]|obs_dim",
            ),
            BadInput(
                "a mask of another length",
                lambda: agent.learn(*batch[:4], batch.mask[:, :2]),
                ValueError,
                r"mask must be \[B, K\] = \[3, 4\]",
            ),
            BadInput(
                "returns-to-go of another batch",
                lambda: agent.learn(
                    batch.states, batch.actions, batch.returns_to_go[:2], *batch[3:]
                ),
                ValueError,
                r"returns_to_go must be \[3, 4\]",
            ),
            BadInput(
                "observations without the return and timestep",
                lambda: agent.predict(np.zeros((2, 1), np.float32)),
                ValueError,
                "ReturnConditioning",
            ),
            BadInput(
                "a negative warm-up",
                lambda: self.make_agent(0, warmup_steps=-1),
                pydantic.ValidationError,
                "warmup_steps",
            ),
        )


def test_segments_hold_returns_to_go_padding_and_timesteps() -> None:
    data = {
        "observations": np.arange(10, dtype=np.float32)[:, None],
        "actions": np.linspace(-1, 1, 10, dtype=np.float32)[:, None],
        "rewards": np.arange(1, 11, dtype=np.float32),
        "next_observations": np.zeros((10, 1), np.float32),
        "terminals": np.zeros(10),
        "timeouts": np.array([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]),  # episodes 0-3 and 4-9 (unfinished)
    }
    segments = TrajectorySegments(data, context_length=3, seed=0, max_episode_steps=5)
    assert segments.episode_lengths.tolist() == [4, 6]
    np.testing.assert_allclose(segments.returns_to_go, [10, 9, 7, 4, 45, 40, 34, 27, 19, 10])
    batch = segments.sample(200)
    for row in range(200):
        start = int(batch.states[row, 0, 0])
        end = 4 if start < 4 else 10
        steps = min(3, end - start)
        np.testing.assert_array_equal(batch.mask[row], [1.0] * steps + [0.0] * (3 - steps))
        np.testing.assert_array_equal(batch.states[row, :steps, 0], np.arange(start, start + steps))
        np.testing.assert_array_equal(
            batch.returns_to_go[row, :steps], segments.returns_to_go[start : start + steps]
        )
        episode_step = np.arange(start, start + steps) - (0 if start < 4 else 4)
        np.testing.assert_array_equal(batch.timesteps[row, :steps], np.minimum(episode_step, 4))
        assert not batch.states[row, steps:].any() and not batch.returns_to_go[row, steps:].any()
    assert {int(s) for s in batch.states[:, 0, 0]} == set(range(10))  # every step starts one
    with pytest.raises(ValueError, match="continuous actions"):
        TrajectorySegments({**data, "actions": np.zeros(10, np.int64)}, 3)


def test_return_conditioning_counts_down_the_target() -> None:
    env = conditioned_env(target_return=-1.0)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3,) and obs[1:].tolist() == [-1.0, 0.0]
    assert env.observation_space.contains(obs)
    next_obs, reward, *_ = env.step(np.array([0.5], np.float32))
    assert next_obs[1:].tolist() == pytest.approx([-1.0 - reward, 1.0])
    assert env.reset(seed=1)[0][1:].tolist() == [-1.0, 0.0]
    with pytest.raises(ValueError, match="flat Box"):
        ReturnConditioning(_DiscreteObs(), 0.0)


class _DiscreteObs(IdentityEnvBox):
    def __init__(self) -> None:
        super().__init__(1)
        self.observation_space = gym.spaces.Discrete(3)


@pytest.mark.parametrize("backend", ["paddle", pytest.param("torch", marks=pytest.mark.torch)])
def test_the_agent_plays_its_history_as_the_algorithm_reads_it(backend) -> None:
    pytest.importorskip(backend)
    parl.set_seed(0, backend=backend)
    model = DecisionTransformerModel(
        1, 1, embed_dim=16, num_layers=1, max_episode_steps=20, backend=backend
    )
    agent = DTAgent(parl.algorithms.get("DT", backend=backend)(model), 3, [0.5], [2.0])
    rng = np.random.default_rng(0)
    states, returns, actions = rng.normal(size=(5, 2)), rng.normal(size=(5, 2)), []
    for t in range(5):  # two envs in lockstep; the history keeps the last 3 steps
        obs = np.stack([states[t], returns[t], np.full(2, t)], axis=1).astype(np.float32)
        actions.append(agent.predict(obs))
    window = slice(2, 5)
    norm = ((states[window] - 0.5) / 2.0).T[..., None]
    history = np.stack([*actions[2:4], np.zeros((2, 1))], axis=1)
    expected = agent.alg.predict(norm, history, returns[window].T, np.tile(np.arange(2, 5), (2, 1)))
    np.testing.assert_allclose(actions[-1], agent.to_numpy(expected), rtol=1e-5, atol=1e-6)
    # Timestep 0 starts over: the first action of a new episode, for any earlier history.
    fresh = DTAgent(agent.alg, 3, [0.5], [2.0])
    first = np.array([[states[0, 0], returns[0, 0], 0.0]], np.float32)
    again = np.array([[states[0, 0], returns[0, 0], 0.0]] * 2, np.float32)
    np.testing.assert_allclose(agent.predict(again)[0], fresh.predict(first)[0], rtol=1e-6)


@pytest.mark.parametrize("backend", ["paddle", pytest.param("torch", marks=pytest.mark.torch)])
def test_the_return_asked_for_steers_the_policy(backend) -> None:
    """Trained on random and near-optimal episodes alike, the agent plays the near-optimal ones
    when asked for return 0 and worse when asked for what random episodes get (about -13)."""
    pytest.importorskip(backend)
    contract = TestDTContract()
    contract.backend = backend
    contract.algorithm_class = parl.algorithms.get("DT", backend=backend)
    agent = contract.make_agent(0)
    contract.train(agent, conditioned_env(), contract.train_steps, seed=0)
    best = identity_score(agent.predict, conditioned_env(0.0))
    poor = identity_score(agent.predict, conditioned_env(-13.0))
    assert best > -0.02 and poor < best - 0.05, (best, poor)


def test_dropout_draws_follow_the_seed() -> None:
    def weights(seed: int) -> dict[str, np.ndarray]:
        parl.set_seed(seed)
        model = DecisionTransformerModel(
            1, 1, embed_dim=16, num_layers=1, max_episode_steps=20, dropout=0.1
        )
        agent = DTAgent(parl.algorithms.get("DT")(model, lr=1e-3), K)
        rng = np.random.default_rng(seed)
        for _ in range(3):
            agent.learn(*identity_segments().sample(8, rng))
        return agent.get_weights()

    first, second, other = weights(1), weights(1), weights(2)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    assert any(not np.array_equal(first[n], other[n]) for n in first)


def test_the_model_refuses_heads_that_do_not_divide_the_width() -> None:
    with pytest.raises(ValueError, match="num_heads"):
        DecisionTransformerModel(3, 1, embed_dim=10, num_heads=3)
    with pytest.raises(ValueError, match="dropout"):
        DecisionTransformerModel(3, 1, dropout=1.0)
