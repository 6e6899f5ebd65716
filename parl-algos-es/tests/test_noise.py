"""The shared noise table: the same numbers in every process, indices checked."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from parl_algos_es import SharedNoiseTable, shared_noise_table

DIGEST = (
    "import hashlib, sys; from parl_algos_es import shared_noise_table; "
    "t = shared_noise_table(int(sys.argv[1]), int(sys.argv[2])); "
    "print(hashlib.sha256(t.noise.tobytes()).hexdigest())"
)


def _digest_in_a_new_process(size: int, seed: int) -> str:
    done = subprocess.run(
        [sys.executable, "-c", DIGEST, str(size), str(seed)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_two_processes_build_the_same_table():
    here = hashlib.sha256(SharedNoiseTable(200_000, 7).noise.tobytes()).hexdigest()
    first, second = _digest_in_a_new_process(200_000, 7), _digest_in_a_new_process(200_000, 7)
    assert first == second == here
    assert _digest_in_a_new_process(200_000, 8) != here, "the seed had no effect"


def test_the_table_is_standard_normal_float32_and_read_only():
    table = SharedNoiseTable(100_000, 0)
    assert table.noise.dtype == np.float32
    assert abs(table.noise.mean()) < 0.02 and abs(table.noise.std() - 1) < 0.02
    with pytest.raises(ValueError, match="read-only"):
        table.noise[0] = 1.0


def test_one_table_per_process_for_a_size_and_seed():
    assert shared_noise_table(5_000, 1) is shared_noise_table(5_000, 1)
    assert shared_noise_table(5_000, 1) is not shared_noise_table(5_000, 2)


def test_get_is_the_slice_at_the_index():
    table = SharedNoiseTable(1_000, 3)
    np.testing.assert_array_equal(table.get(990, 10), table.noise[990:1000])
    assert np.shares_memory(table.get(5, 4), table.noise)


def test_sampled_indices_cover_the_valid_range_only():
    table, rng = SharedNoiseTable(20, 0), np.random.default_rng(0)
    drawn = {table.sample_index(rng, 15) for _ in range(500)}
    assert drawn == set(range(6))


@pytest.mark.parametrize(
    ("index", "dim", "error", "match"),
    [
        (991, 10, IndexError, r"noise index 991 is out of range: .* starts at 0 … 990"),
        (-1, 10, IndexError, "noise index -1 is out of range"),
        (0, 1_001, ValueError, "does not fit a noise table of 1000"),
        (1.5, 10, TypeError, "must be an integer"),
    ],
)
def test_bad_indices_are_clear_errors(index, dim, error, match):
    with pytest.raises(error, match=match):
        SharedNoiseTable(1_000, 3).get(index, dim)


def test_check_indices_names_the_first_bad_one():
    table = SharedNoiseTable(1_000, 3)
    np.testing.assert_array_equal(table.check_indices(np.array([0, 990]), 10), [0, 990])
    with pytest.raises(IndexError, match="noise index 5000"):
        table.check_indices(np.array([0, 5000, 7000]), 10)
    with pytest.raises(TypeError, match="must be integers"):
        table.check_indices(np.array([0.5]), 10)
