"""Every test starts from the same seeds."""

from __future__ import annotations

import parl

import pytest


@pytest.fixture(autouse=True)
def _seed() -> None:
    parl.set_seed(0)
