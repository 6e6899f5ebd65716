"""The shared noise table: the same numbers in every process, one copy per machine for large
tables (and never a damaged one), indices checked."""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

from parl.remote.testing import wait_for

import numpy as np
import pytest

from parl_algos_es import SharedNoiseTable, noise, shared_noise_table
from parl_algos_es.noise import MACHINE_SHARE_MIN

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


# -- one table per machine ---------------------------------------------------------------------

HOLD = (
    "import sys; from parl_algos_es import shared_noise_table; "
    "t = shared_noise_table(int(sys.argv[1]), int(sys.argv[2])); "
    "print(t.segment or 'private', flush=True); sys.stdin.read()"
)


def _unique_seed() -> int:
    return 10_000 + os.getpid()  # no other test run on this machine uses the same segment


def test_a_large_table_is_created_once_per_machine_and_cleaned_up():
    size, seed = MACHINE_SHARE_MIN + 3, _unique_seed()
    creator = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(size), str(seed)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        name = creator.stdout.readline().strip()
        assert name.startswith("parl_es_noise_"), name
        segment = Path("/dev/shm") / name
        assert stat.S_IMODE(segment.stat().st_mode) == 0o600
        attached = SharedNoiseTable(size, seed, machine=True)
        assert attached.segment == name
        private = SharedNoiseTable(size, seed)
        assert private.segment is None
        np.testing.assert_array_equal(attached.noise, private.noise)
        assert not attached.noise.flags.writeable
        creator.stdin.close()  # the creator exits and unlinks the name; the mapping stays
        assert creator.wait(timeout=60) == 0
        wait_for(lambda: not segment.exists(), 10, "the creator's segment to be unlinked")
        np.testing.assert_array_equal(attached.get(size - 10, 10), private.noise[-10:])
    finally:
        creator.kill()
        creator.wait(timeout=60)


def _plant_segment(size: int, seed: int, numbers: np.ndarray, *, ready: bool = True) -> Path:
    """Write a complete-looking segment (header and numbers) under the table's name, as any
    process of this user could."""
    path = Path("/dev/shm") / noise._segment_name(size, seed)
    header = noise._HEADER.pack(noise._MAGIC, size, seed, int(ready)).ljust(noise._OFFSET, b"\0")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(header + numbers.astype(np.float32).tobytes())
    return path


@pytest.mark.parametrize("damage", ["one number", "NaN table", "never ready", "other size"])
def test_a_damaged_or_planted_segment_is_not_used(monkeypatch, damage):
    size, seed = MACHINE_SHARE_MIN, _unique_seed()
    monkeypatch.setattr(noise, "ATTACH_TIMEOUT_S", 0.2)
    numbers = SharedNoiseTable(size, seed).noise.copy()
    if damage == "one number":
        numbers[123] += 1.0
    elif damage == "NaN table":  # a digest of these numbers would match them
        numbers[:] = np.nan
    elif damage == "other size":
        numbers = numbers[:-1]
    path = _plant_segment(size, seed, numbers, ready=damage != "never ready")
    try:
        table = SharedNoiseTable(size, seed, machine=True)
        assert table.segment is None, "a damaged segment was used"
        np.testing.assert_array_equal(table.noise, SharedNoiseTable(size, seed).noise)
    finally:
        path.unlink()


# Builds the machine's table in a child, so that a blocking open fails the test by its
# timeout instead of hanging pytest.
BUILD = (
    "import sys; from parl_algos_es import SharedNoiseTable; "
    "t = SharedNoiseTable(int(sys.argv[1]), int(sys.argv[2]), machine=True); "
    "print(t.segment or 'private', float(t.noise[:1000].sum()), flush=True)"
)


def _squat(path: Path, kind: str, tmp_path: Path) -> None:
    """What another account can put under a predictable name in /dev/shm (made here as root
    and handed to uid 65534, nobody, where the kind has an owner)."""
    if kind == "fifo":
        os.mkfifo(path, 0o666)
    elif kind == "directory":
        path.mkdir(mode=0o777)
    elif kind == "symlink":
        (tmp_path / "target").write_bytes(b"\0" * 64)
        path.symlink_to(tmp_path / "target")
        return
    else:  # another account's complete table: the right numbers, but not this user's
        size, seed = (int(part) for part in path.name.split("_")[-1:-3:-1])
        path.unlink(missing_ok=True)
        _plant_segment(size, seed, SharedNoiseTable(size, seed).noise)
    os.chown(path, 65534, 65534, follow_symlinks=False)


@pytest.mark.skipif(os.getuid() != 0, reason="handing a file to another account needs root")
@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink", "another account's table"])
def test_another_accounts_squat_neither_hangs_nor_is_used(kind, tmp_path):
    size, seed = MACHINE_SHARE_MIN + 5, _unique_seed()
    path = Path("/dev/shm") / noise._segment_name(size, seed)
    _squat(path, kind, tmp_path)
    try:
        done = subprocess.run(
            [sys.executable, "-c", BUILD, str(size), str(seed)],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        segment, total = done.stdout.split()
        assert segment == "private"
        assert float(total) == float(SharedNoiseTable(size, seed).noise[:1000].sum())
    finally:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink(missing_ok=True)


# An xparl job server in small: a resource tracker runs before its jobs are forked from it,
# and a job ends with os._exit; the server lives on. The job's table must not outlive the job.
JOB = """
import os, sys
from multiprocessing import resource_tracker
resource_tracker.ensure_running()
size, seed, ending = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
pid = os.fork()
if pid == 0:
    from parl_algos_es import shared_noise_table
    print(shared_noise_table(size, seed).segment, flush=True)
    if ending == "os._exit":
        os._exit(0)
    sys.stdin.readline()
os.waitpid(pid, 0)
print("the job ended", flush=True)
sys.stdin.readline()
"""


@pytest.mark.parametrize("ending", ["os._exit", "SIGKILL of its process group"])
def test_the_segment_is_unlinked_however_its_creator_ends(ending):
    size, seed = MACHINE_SHARE_MIN + 7, _unique_seed()
    server = subprocess.Popen(
        [sys.executable, "-c", JOB, str(size), str(seed), ending],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        name = server.stdout.readline().strip()
        assert name.startswith("parl_es_noise_"), name
        segment = Path("/dev/shm") / name
        if ending == "os._exit":
            assert server.stdout.readline().strip() == "the job ended"
        else:
            assert segment.exists()
            os.killpg(server.pid, signal.SIGKILL)
        wait_for(lambda: not segment.exists(), 10, f"{name} to be unlinked after {ending}")
    finally:
        server.kill()
        server.wait(timeout=60)
