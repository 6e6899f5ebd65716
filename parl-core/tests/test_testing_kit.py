"""parl.testing: identity environments, the conformance check, temporary registration."""

from __future__ import annotations

import copy

import parl
from parl.core.config import AlgorithmConfig
from parl.testing import (
    ConformanceError,
    IdentityEnv,
    IdentityEnvBox,
    check_algorithm,
    registered_algorithm,
)

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pydantic import BaseModel, ConfigDict


@pytest.mark.parametrize("env", [IdentityEnv(n=3), IdentityEnvBox(dim=2)])
def test_identity_envs_pass_gymnasiums_checker(env) -> None:
    check_env(env, skip_render_check=True)


def test_identity_env_rewards_the_identity_policy() -> None:
    env = IdentityEnv(n=4, episode_length=10)
    obs, _ = env.reset(seed=1)
    total, done = 0.0, False
    while not done:
        obs, reward, done, _, _ = env.step(int(np.argmax(obs)))
        total += reward
    assert total == 10.0
    box = IdentityEnvBox(dim=2, episode_length=5)
    obs, _ = box.reset(seed=1)
    assert box.step(obs)[1] == 0.0
    with pytest.raises(ValueError, match="shape"):
        box.step(np.zeros(3))


class GoodConfig(AlgorithmConfig):
    lr: float = 0.1
    """Learning rate."""


class Good(parl.Algorithm):
    """Good: an algorithm that follows the contract."""

    Config = GoodConfig

    def __init__(self, model, **options) -> None:
        super().__init__(model, **options)
        self.target_model = copy.deepcopy(model)


def test_conformance_passes_for_a_good_algorithm(tiny_model_cls: type) -> None:
    check_algorithm(Good, lambda: Good(tiny_model_cls()))


def test_conformance_catches_an_unfrozen_permissive_config() -> None:
    class LooseConfig(BaseModel):
        model_config = ConfigDict(extra="ignore")
        lr: float = 0.1

    class Loose(parl.Algorithm):
        """Loose: breaks the config rules."""

        Config = LooseConfig

    with pytest.raises(ConformanceError, match="extra='forbid'"):
        check_algorithm(Loose)


def test_conformance_catches_undocumented_fields() -> None:
    class BareConfig(AlgorithmConfig):
        lr: float = 0.1

    class Bare(parl.Algorithm):
        """Bare: a field without a docstring."""

        Config = BareConfig

    with pytest.raises(ConformanceError, match=r"without a docstring: \['lr'\]"):
        check_algorithm(Bare)


def test_conformance_catches_shared_weights(tiny_model_cls: type) -> None:
    class Shared(Good):
        """Shared: its deep copy shares the model (a broken __deepcopy__)."""

        def __deepcopy__(self, memo):
            return self

    with pytest.raises(ConformanceError, match="deep copy shares weights"):
        check_algorithm(Shared, lambda: Shared(tiny_model_cls()))


def test_registered_algorithm_is_temporary() -> None:
    with registered_algorithm("GoodTemp", Good):
        assert parl.algorithms.get("GoodTemp") is Good
        assert "GoodTemp" in parl.algorithms.names()
    assert "GoodTemp" not in parl.algorithms.names()
    with pytest.raises(LookupError):
        parl.algorithms.get("GoodTemp")
