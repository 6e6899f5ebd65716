"""AlgorithmConfig.build: UNSET and None overrides, PARL-style signatures."""

from __future__ import annotations

import copy
import pickle

from parl.core.config import UNSET, AlgorithmConfig

import pydantic
import pytest
from pydantic import PositiveFloat


class ClipConfig(AlgorithmConfig):
    lr: PositiveFloat = 1e-3
    """Learning rate."""
    max_grad_norm: PositiveFloat | None = 0.5
    """Global-norm clipping; None switches it off."""


def test_none_keeps_the_default_of_a_field_that_cannot_be_none() -> None:
    # PARL 2.x signatures default hyperparameters to None: DQN(model, gamma=None, lr=None).
    assert ClipConfig.build(lr=None).lr == 1e-3
    assert ClipConfig.build({"lr": 0.1}, lr=None).lr == 0.1


def test_none_switches_off_a_field_that_accepts_none() -> None:
    assert ClipConfig.build(max_grad_norm=None).max_grad_norm is None
    assert ClipConfig.build({"max_grad_norm": 2.0}, max_grad_norm=None).max_grad_norm is None
    assert ClipConfig.build(ClipConfig(max_grad_norm=2.0), max_grad_norm=None).max_grad_norm is None


def test_unset_keeps_the_config_value() -> None:
    assert ClipConfig.build(max_grad_norm=UNSET).max_grad_norm == 0.5
    assert ClipConfig.build({"max_grad_norm": 2.0}, max_grad_norm=UNSET).max_grad_norm == 2.0


def test_unknown_names_are_reported_even_when_none() -> None:
    with pytest.raises(pydantic.ValidationError, match="max_grad_nrom"):
        ClipConfig.build(max_grad_nrom=None)


def test_unset_survives_copies_and_pickles() -> None:
    assert copy.deepcopy(UNSET) is UNSET
    assert pickle.loads(pickle.dumps(UNSET)) is UNSET
    assert repr(UNSET) == "UNSET"


def test_bad_base_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="a ClipConfig, a mapping or None, got list"):
        ClipConfig.build([("lr", 1.0)])  # type: ignore[arg-type]
