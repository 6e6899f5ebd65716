"""Every test starts from the same seeds."""

from __future__ import annotations

import parl

import pytest


@pytest.fixture(autouse=True)
def _seed() -> None:
    parl.set_seed(0)


@pytest.fixture(params=["paddle", pytest.param("torch", marks=pytest.mark.torch)])
def backend(request: pytest.FixtureRequest) -> str:
    """Each test taking ``backend`` runs on paddle and (marker ``torch``) on torch."""
    parl.set_seed(0, backend=request.param)
    return str(request.param)
