"""Per-algorithm behaviour of DQN and DDQN: learning, checkpoints, determinism, contracts."""

from __future__ import annotations

import parl
from parl.core.errors import ModelContractError
from parl.testing import check_algorithm, registered_algorithm

import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_dqn import DDQN, DQN, DQNAgent, DQNConfig, DuelingQNetwork, QNetwork

ALGOS = [DQN, DDQN]


@pytest.mark.parametrize("cls", ALGOS)
def test_smoke_predict_learn_sync(cls) -> None:
    algorithm = cls(DuelingQNetwork(4, 3, hidden_sizes=(8,)), gamma=0.99, lr=1e-3)
    obs = paddle.randn([6, 4])
    assert algorithm.predict(obs).shape == [6, 3]
    loss = algorithm.learn(
        obs, paddle.zeros([6, 1], "int64"), paddle.ones([6, 1]), obs, paddle.zeros([6, 1])
    )
    assert loss.shape == [] and np.isfinite(float(loss))
    algorithm.sync_target()


@pytest.mark.parametrize("cls", ALGOS)
def test_learns_identity_env(cls, helpers) -> None:
    agent, env = helpers.identity_agent(cls, seed=0)
    before = helpers.greedy_return(agent, env, episodes=5, seed=100)
    helpers.train_identity(agent, env, steps=400, seed=0)
    after = helpers.greedy_return(agent, env, episodes=5, seed=100)
    # A random policy gets 20 / 4 = 5 per episode; the best is 20.
    assert before <= 12.0, f"the untrained greedy policy already scores {before}"
    assert after >= 18.0, f"greedy return {after} after training (before: {before})"


@pytest.mark.parametrize("cls", ALGOS)
def test_save_restore_round_trip(cls, helpers, tmp_path, rng) -> None:
    agent, env = helpers.identity_agent(cls, seed=0)
    helpers.train_identity(agent, env, steps=130, seed=0)  # target lags the model now
    path = tmp_path / "ckpt" / "agent.pdparams"
    agent.save(path)
    saved = agent.get_weights()
    assert set(saved) == {"model", "target_model"}
    assert not all(
        np.array_equal(saved["model"][k], saved["target_model"][k]) for k in saved["model"]
    )

    other, _ = helpers.identity_agent(cls, seed=1)
    obs = rng.random((16, 4)).astype(np.float32)
    other.restore(path)
    np.testing.assert_array_equal(
        other.alg.predict(paddle.to_tensor(obs)).numpy(),
        agent.alg.predict(paddle.to_tensor(obs)).numpy(),
    )
    for name, value in other.alg.target_model.get_weights().items():
        np.testing.assert_array_equal(value, saved["target_model"][name])


@pytest.mark.parametrize("cls", ALGOS)
def test_same_seed_same_weights(cls, helpers) -> None:
    def weights(seed: int) -> dict:
        agent, env = helpers.identity_agent(cls, seed=seed)
        helpers.train_identity(agent, env, steps=130, seed=seed)
        return agent.get_weights()["model"]

    first, second, other = weights(3), weights(3), weights(4)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])
    assert not all(np.array_equal(first[name], other[name]) for name in first)


@pytest.mark.parametrize("cls", ALGOS)
@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"gama": 0.9}, "gama"),
        ({"lr": -1.0}, "lr"),
        ({"gamma": 0.0}, "gamma"),
        ({"gamma": 1.5}, "gamma"),
        ({"loss": "l1"}, "loss"),
        ({"max_grad_norm": 0.0}, "max_grad_norm"),
    ],
)
def test_bad_config_names_the_field(cls, options, field) -> None:
    with pytest.raises(pydantic.ValidationError, match=field):
        cls(QNetwork(2, 2), **options)


def test_config_defaults_and_overrides() -> None:
    algorithm = DQN(QNetwork(2, 2), 0.5, config={"loss": "huber"}, lr=3e-4)
    assert algorithm.config == DQNConfig(gamma=0.5, lr=3e-4, loss="huber")
    assert DQNConfig().loss == "mse" and DQNConfig().max_grad_norm is None


def test_model_without_forward_is_refused() -> None:
    class NoForward(parl.Model):
        def __init__(self) -> None:
            super().__init__()
            self.fc = paddle.nn.Linear(2, 2)

    with pytest.raises(ModelContractError, match="forward"):
        DQN(NoForward())
    with pytest.raises(TypeError, match="parl.Model"):
        DDQN(None)


@pytest.mark.parametrize("cls", ALGOS)
def test_wrong_shapes_are_clear_errors(cls) -> None:
    algorithm = cls(QNetwork(2, 3, hidden_sizes=(4,)))
    obs, act = paddle.zeros([5, 2]), paddle.zeros([5], "int64")
    rew, term = paddle.zeros([5]), paddle.zeros([5])
    with pytest.raises(ValueError, match=r"observations of shape \[5, 7\]"):
        algorithm.learn(paddle.zeros([5, 7]), act, rew, paddle.zeros([5, 7]), term)
    with pytest.raises(ValueError, match="obs and next_obs"):
        algorithm.learn(obs, act, rew, paddle.zeros([4, 2]), term)
    with pytest.raises(ValueError, match=r"action has shape \[5, 3\]"):
        algorithm.learn(obs, paddle.zeros([5, 3], "int64"), rew, obs, term)
    with pytest.raises(ValueError, match=r"reward has shape \[4\]"):
        algorithm.learn(obs, act, paddle.zeros([4]), obs, term)
    with pytest.raises(TypeError, match="integer action"):
        algorithm.learn(obs, paddle.zeros([5]), rew, obs, term)


@pytest.mark.parametrize("cls", ALGOS)
def test_conformance(cls) -> None:
    check_algorithm(cls, lambda: cls(QNetwork(3, 2, hidden_sizes=(4,))))


def test_registry_lookup() -> None:
    assert parl.algorithms.get("DQN") is DQN
    assert parl.algorithms.get("DDQN") is DDQN
    assert {"DQN", "DDQN"} <= set(parl.algorithms.names())
    from parl.algorithms import DDQN as FromImport

    assert FromImport is DDQN
    with registered_algorithm("MyDQN", DQN):
        assert parl.algorithms.get("MyDQN") is DQN


def test_agent_exploration_and_validation() -> None:
    agent = DQNAgent(DQN(QNetwork(4, 3, hidden_sizes=(4,))), act_dim=3, seed=0)
    obs = np.random.default_rng(0).random((2_000, 4)).astype(np.float32)
    greedy = agent.predict(obs)
    np.testing.assert_array_equal(agent.sample(obs, epsilon=0.0), greedy)
    random = agent.sample(obs, epsilon=1.0)
    assert set(np.unique(random)) == {0, 1, 2}
    half = agent.sample(obs, epsilon=0.5)
    assert 0.55 < np.mean(half == greedy) < 0.8  # 1/2 greedy + 1/2 * 1/3 random agreement
    with pytest.raises(ValueError, match="obs\\[None\\]"):
        agent.predict(obs[0])
    with pytest.raises(ValueError, match="epsilon"):
        agent.sample(obs, epsilon=1.5)
    with pytest.raises(ValueError, match="target_update_interval"):
        DQNAgent(agent.alg, act_dim=3, target_update_interval=0)


def test_agent_syncs_target_every_interval(rng) -> None:
    agent = DQNAgent(DQN(QNetwork(2, 2, hidden_sizes=(4,))), 2, target_update_interval=3)
    batch = (
        rng.random((4, 2)),
        rng.integers(0, 2, 4),
        rng.random(4),
        rng.random((4, 2)),
        np.zeros(4),
    )
    for step in range(1, 4):
        agent.learn(*batch)
        weights = agent.get_weights()
        same = all(
            np.array_equal(weights["model"][k], weights["target_model"][k])
            for k in weights["model"]
        )
        assert same == (step == 3)
