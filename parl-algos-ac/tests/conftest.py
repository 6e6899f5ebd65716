"""Shared fixtures: every test starts from the same seed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import parl

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed() -> None:
    parl.set_seed(0)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture
def same_gaussian_noise(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Call it to make both backends' ``DiagGaussian.rsample`` draw ``mean + std * eps`` with
    ``eps`` from a numpy stream of the given seed (one stream per backend, seeded alike), so a
    paddle and a torch SAC draw the same noise."""

    def patch(seed: int) -> None:
        from parl.core import distributions as paddle_dists
        from parl.core.torch import distributions as torch_dists

        import paddle
        import torch

        paddle_rng, torch_rng = np.random.default_rng(seed), np.random.default_rng(seed)

        def paddle_rsample(self: Any) -> Any:
            eps = paddle_rng.standard_normal(self.mean.shape).astype(np.float32)
            return self.mean + self.std * paddle.to_tensor(eps)

        def torch_rsample(self: Any) -> Any:
            eps = torch_rng.standard_normal(tuple(self.mean.shape)).astype(np.float32)
            return self.mean + self.std * torch.from_numpy(eps)

        monkeypatch.setattr(paddle_dists.DiagGaussian, "rsample", paddle_rsample)
        monkeypatch.setattr(torch_dists.DiagGaussian, "rsample", torch_rsample)

    return patch
