"""The plugin as its users meet it: through PARL's registry, from an installed wheel.

``parl.testing.AlgorithmContract`` gives it PARL's standard suite (conformance, learning,
determinism, save/restore, checkpoint-resume, bad input) from three hooks.
"""

from __future__ import annotations

import parl
from parl.testing import AlgorithmContract, BadInput

import numpy as np
import paddle
import pydantic

EYE = np.eye(4, dtype=np.float32)


class LinearRewards(parl.Model):
    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(obs_dim, n_actions)

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        return self.fc(obs)


class BanditAgent(parl.Agent):
    """numpy in, numpy out: one context or a batch."""

    def predict(self, obs):
        return self.alg.predict(paddle.to_tensor(obs, dtype="float32")).numpy()

    def sample(self, obs):
        return self.alg.sample(paddle.to_tensor(obs, dtype="float32")).numpy()

    def learn(self, obs, action, reward):
        tensors = (paddle.to_tensor(x) for x in (obs, action, np.asarray(reward, np.float32)))
        return self.alg.learn(*tensors)


def test_registry_finds_the_plugin_by_name() -> None:
    assert "ContextualBandit" in parl.algorithms.names()
    cls = parl.algorithms.get("ContextualBandit")
    assert cls.__module__ == "acme_parl_bandit.bandit"
    entry = parl.algorithms.entries()["ContextualBandit"][0]
    assert entry.distribution == "acme-parl-bandit"


class TestContextualBandit(AlgorithmContract):
    algorithm_class = parl.algorithms.get("ContextualBandit")
    train_steps = 60
    short_train_steps = 5

    def make_agent(self, seed, **config):
        parl.set_seed(seed)
        return BanditAgent(self.algorithm_class(LinearRewards(4, 4), **{"lr": 0.05, **config}))

    def learn_batch(self, agent, rng):
        obs = EYE[rng.integers(0, 4, 32)]
        actions = agent.sample(obs)
        return agent.learn(obs, actions, (actions == obs.argmax(axis=1)).astype(np.float32))

    def bad_inputs(self, agent):
        yield BadInput(
            "epsilon above 1",
            lambda: self.algorithm_class(LinearRewards(4, 4), epsilon=2.0),
            pydantic.ValidationError,
            "epsilon",
        )
