"""The plugin as its users meet it: through PARL's registry, from an installed wheel."""

from __future__ import annotations

import parl
from parl.testing import IdentityEnv, check_algorithm

import numpy as np
import paddle
import pydantic
import pytest


class LinearRewards(parl.Model):
    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(obs_dim, n_actions)

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        return self.fc(obs)


def test_registry_finds_the_plugin_by_name() -> None:
    assert "ContextualBandit" in parl.algorithms.names()
    cls = parl.algorithms.get("ContextualBandit")
    assert cls.__module__ == "acme_parl_bandit.bandit"
    entry = parl.algorithms.entries()["ContextualBandit"][0]
    assert entry.distribution == "acme-parl-bandit"


def test_conformance() -> None:
    cls = parl.algorithms.get("ContextualBandit")
    check_algorithm(cls, lambda: cls(LinearRewards(4, 4)))


def test_learns_the_identity_task() -> None:
    paddle.seed(0)
    env = IdentityEnv(n=4, episode_length=32)
    bandit = parl.algorithms.get("ContextualBandit")(LinearRewards(4, 4), lr=0.05)
    env.reset(seed=0)
    for _ in range(60):
        batch = paddle.to_tensor(np.stack([env.reset()[0] for _ in range(32)]))
        actions = bandit.sample(batch)
        rewards = (actions.numpy() == batch.numpy().argmax(axis=1)).astype("float32")
        bandit.learn(batch, actions, paddle.to_tensor(rewards))
    test = paddle.to_tensor(np.eye(4, dtype="float32"))
    assert bandit.predict(test).numpy().tolist() == [0, 1, 2, 3]


def test_bad_config_names_the_field() -> None:
    cls = parl.algorithms.get("ContextualBandit")
    with pytest.raises(pydantic.ValidationError, match="epsilon"):
        cls(LinearRewards(4, 4), epsilon=2.0)
