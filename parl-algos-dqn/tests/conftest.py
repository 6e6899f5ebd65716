"""Shared helpers: a linear Q-model small enough to check the TD update by hand."""

from __future__ import annotations

from types import SimpleNamespace

import parl

import numpy as np
import paddle
import pytest


class LinearQ(parl.Model):
    """``Q = obs @ W + b``: small enough to write the TD loss by hand in numpy."""

    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(obs_dim, act_dim)

    def forward(self, obs):
        return self.fc(obs)


@pytest.fixture(autouse=True)
def _seed() -> None:
    parl.set_seed(0)


@pytest.fixture
def helpers() -> SimpleNamespace:
    """The helpers above, by name."""
    return SimpleNamespace(LinearQ=LinearQ)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
