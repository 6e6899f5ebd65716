"""Shared helpers: a linear Q-model small enough to check the TD update by hand."""

from __future__ import annotations

from types import SimpleNamespace

import parl
from parl.testing import LinearModel

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed() -> None:
    parl.set_seed(0)


@pytest.fixture
def helpers() -> SimpleNamespace:
    """The helpers above, by name."""
    return SimpleNamespace(LinearQ=LinearModel)  # Q = obs @ W + b


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
