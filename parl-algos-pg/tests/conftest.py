"""Small models shared by the tests, handed out through the ``models`` fixture."""

from __future__ import annotations

from types import SimpleNamespace

import parl

import paddle
import paddle.nn.functional as F
import pytest


class ProbsMLP(parl.Model):
    """One hidden layer, softmax output: PARL's PolicyGradient model contract."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 16) -> None:
        super().__init__()
        self.fc1 = paddle.nn.Linear(obs_dim, hidden)
        self.fc2 = paddle.nn.Linear(hidden, act_dim)

    def forward(self, obs):
        return F.softmax(self.fc2(paddle.tanh(self.fc1(obs))), axis=-1)


class LinearLogits(parl.Model):
    """A single linear layer returning logits, so the loss is easy to write in numpy."""

    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(obs_dim, act_dim)

    def forward(self, obs):
        return self.fc(obs)


class LinearProbs(LinearLogits):
    def forward(self, obs):
        return F.softmax(self.fc(obs), axis=-1)


@pytest.fixture(autouse=True)
def _seed() -> None:
    parl.set_seed(0)


@pytest.fixture
def models() -> SimpleNamespace:
    """The model classes above, by name."""
    return SimpleNamespace(ProbsMLP=ProbsMLP, LinearLogits=LinearLogits, LinearProbs=LinearProbs)
