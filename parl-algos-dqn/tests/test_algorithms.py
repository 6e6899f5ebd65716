"""DQN and DDQN through the contract test suite on both backends, and what only they have."""

from __future__ import annotations

import parl
from parl.core.errors import ModelContractError
from parl.testing import AlgorithmContract, BadInput, registered_algorithm
from parl.testing.contract import copy_weights_across, max_weight_difference
from parl.utils.replay_memory import ReplayMemory

import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_dqn import DDQN, DQN, DQNAgent, DQNConfig, QNetwork

ALGOS = [DQN, DDQN]
EYE = np.eye(4, dtype=np.float32)


class DQNContract(AlgorithmContract):
    """The suite once per backend: the same classes on paddle and on torch (marker ``torch``)."""

    backends = ("paddle", "torch")
    train_steps = 400
    short_train_steps = 130

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        network = QNetwork(4, 4, hidden_sizes=(32,), backend=self.backend)
        algorithm = self.algorithm_class(network, gamma=0.9, lr=5e-3, **config)
        # Syncs every 5 learn steps, so that the resume test crosses a sync.
        return DQNAgent(algorithm, act_dim=4, target_update_interval=5, seed=seed)

    def explore(self, agent, obs):
        return agent.sample(obs, epsilon=0.5)

    def train(self, agent, env, steps, seed):
        rpm = ReplayMemory(10_000, obs_dim=4, act_dim=0, seed=seed)
        obs, _ = env.reset(seed=seed)
        for step in range(steps):
            epsilon = max(0.05, 1.0 - step / (0.5 * steps))
            action = int(agent.sample(obs, epsilon))
            next_obs, reward, terminated, truncated, _ = env.step(action)
            rpm.append(obs, action, reward, next_obs, terminated)
            obs = next_obs if not (terminated or truncated) else env.reset()[0]
            if step >= 100:
                agent.learn(*rpm.sample_batch(32))

    def learn_batch(self, agent, rng):
        obs, next_obs = EYE[rng.integers(0, 4, 32)], EYE[rng.integers(0, 4, 32)]
        action = rng.integers(0, 4, 32)
        reward = (action == obs.argmax(1)).astype(np.float32)
        return agent.learn(obs, action, reward, next_obs, rng.random(32) < 0.1)

    def bad_inputs(self, agent):
        obs, act, rew = EYE[:3], np.zeros(3, np.int64), np.zeros(3, np.float32)
        yield from (
            BadInput(
                "observations the model was not built for",
                lambda: agent.learn(np.zeros((3, 7)), act, rew, np.zeros((3, 7)), rew),
                ValueError,
                r"observations of shape \[3, 7\]",
            ),
            BadInput(
                "next_obs of another batch",
                lambda: agent.learn(obs, act, rew, EYE[:2], rew),
                ValueError,
                "obs and next_obs",
            ),
            BadInput(
                "actions shaped [B, 3]",
                lambda: agent.learn(obs, np.zeros((3, 3), np.int64), rew, obs, rew),
                ValueError,
                r"discrete actions must have shape \[3\] or \[3, 1\]",
            ),
            BadInput(
                "rewards of another batch",
                lambda: agent.learn(obs, act, rew[:2], obs, rew),
                ValueError,
                r"reward must have shape \[3\]",
            ),
            BadInput(
                "float actions",
                lambda: agent.alg.learn(obs, rew, rew, obs, rew),
                TypeError,
                "must be integers",
            ),
            BadInput(
                "epsilon above 1",
                lambda: agent.sample(obs, epsilon=1.5),
                ValueError,
                "epsilon",
            ),
            BadInput(
                "a zero target sync interval",
                lambda: DQNAgent(agent.alg, act_dim=4, target_update_interval=0),
                ValueError,
                "target_update_interval must be an integer > 0",
            ),
            BadInput(
                "act_dim given as a bool",
                lambda: DQNAgent(agent.alg, act_dim=True),
                ValueError,
                "act_dim must be an integer > 0",
            ),
            BadInput(
                "gamma above 1",
                lambda: self.algorithm_class(QNetwork(4, 4, backend=self.backend), gamma=1.5),
                pydantic.ValidationError,
                "gamma",
            ),
        )


class TestDQNContract(DQNContract):
    algorithm_name = "DQN"


class TestDDQNContract(DQNContract):
    algorithm_name = "DDQN"


@pytest.mark.parametrize("cls", ALGOS)
@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"lr": -1.0}, "lr"),
        ({"gamma": 0.0}, "gamma"),
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
    # PARL's signature: None means "the default"; for max_grad_norm None switches clipping off.
    assert DQN(QNetwork(2, 2), gamma=None, lr=None).config == DQNConfig()
    clipped = {"max_grad_norm": 10.0}
    assert DQN(QNetwork(2, 2), config=clipped, max_grad_norm=None).config.max_grad_norm is None


def test_model_without_forward_is_refused() -> None:
    class NoForward(parl.Model):
        def __init__(self) -> None:
            super().__init__()
            self.fc = paddle.nn.Linear(2, 2)

    with pytest.raises(ModelContractError, match="forward"):
        DQN(NoForward())
    with pytest.raises(TypeError, match="parl.Model"):
        DDQN(None)


def test_registry_lookup() -> None:
    assert parl.algorithms.get("DQN") is DQN
    assert parl.algorithms.get("DDQN") is DDQN
    assert {"DQN", "DDQN"} <= set(parl.algorithms.names())
    from parl.algorithms import DDQN as FromImport

    assert FromImport is DDQN
    with registered_algorithm("MyDQN", DQN):
        assert parl.algorithms.get("MyDQN") is DQN


def test_agent_explores_one_observation_or_a_batch() -> None:
    agent = DQNAgent(DQN(QNetwork(4, 3, hidden_sizes=(4,))), act_dim=3, seed=0)
    obs = np.random.default_rng(0).random((2_000, 4)).astype(np.float32)
    greedy = agent.predict(obs)
    np.testing.assert_array_equal(agent.sample(obs, epsilon=0.0), greedy)
    random = agent.sample(obs, epsilon=1.0)
    assert set(np.unique(random)) == {0, 1, 2}
    half = agent.sample(obs, epsilon=0.5)
    assert 0.55 < np.mean(half == greedy) < 0.8  # 1/2 greedy + 1/2 * 1/3 random agreement
    assert agent.predict(obs[0]).shape == () and agent.predict(obs[0]) == greedy[0]
    assert agent.sample(obs[0], epsilon=1.0).shape == ()


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
        model, target = agent.alg.model.get_weights(), agent.alg.target_model.get_weights()
        same = all(np.array_equal(model[k], target[k]) for k in model)
        assert same == (step == 3)


@pytest.mark.torch
@pytest.mark.parametrize("cls", ALGOS)
def test_huber_loss_is_the_same_on_both_backends(cls) -> None:
    """paddle's smooth_l1_loss(delta) is torch's huber_loss(delta), not smooth_l1_loss(beta)."""
    pytest.importorskip("torch")
    agents = {
        backend: DQNAgent(
            cls(QNetwork(4, 4, (8,), backend=backend), loss="huber", huber_delta=0.3, lr=0.1),
            act_dim=4,
        )
        for backend in ("paddle", "torch")
    }
    copy_weights_across(agents["paddle"], agents["torch"])
    rng = np.random.default_rng(0)
    batch = (rng.random((16, 4)), rng.integers(0, 4, 16), 5 * rng.random(16), rng.random((16, 4)))
    losses = [float(agent.learn(*batch, np.zeros(16))) for agent in agents.values()]
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    assert max_weight_difference(agents["paddle"], agents["torch"]) < 1e-5
