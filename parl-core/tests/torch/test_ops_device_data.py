"""The ops a replay memory on the device uses (``zeros``, ``generator``, ``randint``): the same
meaning on paddle and torch."""

from __future__ import annotations

from parl.core.ops import ops_of_backend

import numpy as np
import pytest

torch = pytest.importorskip("torch")
paddle = pytest.importorskip("paddle")
pytestmark = pytest.mark.torch

BACKENDS = ("paddle", "torch")


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "uint8", "int64"])
def test_zeros_has_the_shape_and_dtype_asked_for(name: str, dtype: str) -> None:
    ops = ops_of_backend(name)
    made = np.asarray(ops.to_numpy(ops.zeros((3, 2), dtype, ops.resolve_device("cpu"))))
    assert made.shape == (3, 2) and made.dtype == np.dtype(dtype) and not made.any()


@pytest.mark.parametrize("name", BACKENDS)
def test_randint_draws_from_its_own_seeded_generator(name: str) -> None:
    ops = ops_of_backend(name)
    ops.seed_rng(0)
    default_first = ops.to_numpy(ops.uniform_like(ops.zeros([3], "float32"), 0.0, 1.0))
    ops.seed_rng(0)
    one, same, other = (ops.generator(seed, "cpu") for seed in (5, 5, 6))
    draws = [np.asarray(ops.to_numpy(ops.randint(7, 500, g))) for g in (one, same, other)]
    assert draws[0].dtype == np.int64 and draws[0].shape == (500,)
    assert set(draws[0].tolist()) == set(range(7))  # uniform over [0, 7): 500 draws see all
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])
    assert not np.array_equal(np.asarray(ops.to_numpy(ops.randint(7, 500, one))), draws[0])
    # The default generator is where parl.set_seed left it.
    default_next = ops.to_numpy(ops.uniform_like(ops.zeros([3], "float32"), 0.0, 1.0))
    np.testing.assert_array_equal(default_next, default_first)
