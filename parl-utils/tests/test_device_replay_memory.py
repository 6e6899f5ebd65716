"""DeviceReplayMemory: the host memory's semantics, errors and files, with tensors on the device.

Each test runs on paddle's CPU build (the ``tests`` session) and on torch's (marked ``torch``:
the ``torch`` session); the device is the CPU here and a GPU where one is lent
(``parl-core/tests/torch/test_device_gpu.py`` runs the same memory on CUDA).
"""

from __future__ import annotations

from pathlib import Path

from parl.core.ops import ops_of_backend
from parl.utils import DeviceReplayMemory, ReplayMemory, TransitionBatch, make_replay_memory

import numpy as np
import pytest

BACKENDS = [
    pytest.param("paddle", id="paddle"),
    pytest.param("torch", id="torch", marks=pytest.mark.torch),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    pytest.importorskip(request.param)
    return str(request.param)


def fill(rpm: ReplayMemory, count: int) -> ReplayMemory:
    """Append transition ``i`` (obs ``[i, i]``, action ``i``, reward ``i``) for ``i < count``."""
    for i in range(count):
        rpm.append([i, i], i, float(i), [i + 1, i + 1], i % 2 == 1)
    return rpm


def host(rpm: DeviceReplayMemory, batch: TransitionBatch) -> list[np.ndarray]:
    return [np.asarray(rpm.ops.to_numpy(field)) for field in batch]


def stored(rpm: DeviceReplayMemory, field: str) -> np.ndarray:
    return np.asarray(rpm.ops.to_numpy(getattr(rpm, field)))


def test_appends_store_what_the_host_memory_stores(backend: str) -> None:
    device = DeviceReplayMemory(4, obs_dim=1, act_dim=1, backend=backend)
    on_host = ReplayMemory(4, obs_dim=1, act_dim=1)
    for rpm in (device, on_host):
        rpm.append([0.5], 0.5, 1.0, [1.5], True)
        # A vector env's step that wraps the ring, then one longer than the ring.
        rpm.append_batch(
            np.arange(3)[:, None], np.arange(3), np.arange(3), np.zeros((3, 1)), [0, 0, 1]
        )
        rpm.append_batch(
            np.arange(3, 9)[:, None], np.arange(3, 9), np.arange(3, 9), np.zeros((6, 1)), np.ones(6)
        )
        rpm.append([9.0], -1.0, 9.0, [10.0], False)
    assert len(device) == len(on_host) == 4 and device._curr_pos == on_host._curr_pos
    for field in ("obs", "action", "reward", "next_obs", "terminal"):
        np.testing.assert_array_equal(stored(device, field), getattr(on_host, field))


def test_sample_batch_gives_tensors_on_the_device(backend: str) -> None:
    rpm = fill(DeviceReplayMemory(5, obs_dim=2, act_dim=0, backend=backend, seed=0), 7)
    batch = rpm.sample_batch(64)
    assert isinstance(batch, TransitionBatch)
    assert all(isinstance(field, rpm.ops.BACKEND.tensor_type) for field in batch)
    obs, action, reward, next_obs, terminal = host(rpm, batch)
    assert obs.shape == next_obs.shape == (64, 2) and obs.dtype == np.float32
    assert action.shape == (64,) and action.dtype == np.int64
    assert reward.dtype == terminal.dtype == np.float32  # terminal: what a TD target multiplies
    # Rows stay whole, and only the 5 newest transitions (2 to 6) are drawn.
    np.testing.assert_array_equal(obs[:, 0], action)
    np.testing.assert_array_equal(next_obs[:, 0], action + 1)
    np.testing.assert_array_equal(terminal, action % 2)
    assert set(action.tolist()) <= {2, 3, 4, 5, 6} and len(set(action.tolist())) > 1


def test_same_seed_same_batches_and_the_default_generator_untouched(backend: str) -> None:
    ops = ops_of_backend(backend)
    ops.seed_rng(7)
    expected_default = ops.to_numpy(ops.uniform_like(ops.zeros([4], "float32"), 0.0, 1.0))
    ops.seed_rng(7)
    first, second, third = (
        fill(DeviceReplayMemory(9, 2, 0, backend=backend, seed=seed), 9) for seed in (3, 3, 4)
    )
    draws = [host(rpm, rpm.sample_batch(16))[1] for rpm in (first, second, third)]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])
    # Later draws go on from the earlier ones, as numpy's generator does.
    assert not np.array_equal(host(first, first.sample_batch(16))[1], draws[0])
    # The memory's draws leave the framework's own generator (what parl.set_seed seeds) alone.
    after = ops.to_numpy(ops.uniform_like(ops.zeros([4], "float32"), 0.0, 1.0))
    np.testing.assert_array_equal(after, expected_default)


def test_sampling_copies_nothing_from_the_host(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rpm = fill(DeviceReplayMemory(5, 2, 0, backend=backend, seed=0), 5)
    calls: list[object] = []
    original = rpm.ops.to_tensor
    monkeypatch.setattr(rpm.ops, "to_tensor", lambda *a, **k: calls.append(a) or original(*a, **k))
    rpm.sample_batch(32)
    rpm.sample_tensor_batches(8, 4)
    assert calls == []
    rpm.append([1, 1], 1, 1.0, [2, 2], False)  # an append copies its 5 fields, once each
    assert len(calls) == 5


def test_sample_tensor_batches_are_the_draws_of_one_sample_batch(backend: str) -> None:
    one, many = (fill(DeviceReplayMemory(5, 2, 0, backend=backend, seed=1), 5) for _ in range(2))
    whole = host(one, one.sample_batch(12))
    batches = many.sample_tensor_batches(4, 3)
    assert len(batches) == 3
    for i, batch in enumerate(batches):
        for field, expected in zip(host(many, batch), whole, strict=True):
            np.testing.assert_array_equal(field, expected[4 * i : 4 * (i + 1)])
    other = "torch" if backend == "paddle" else "paddle"
    with pytest.raises(ValueError, match=f"keeps {backend} tensors; pass backend='{backend}'"):
        many.sample_tensor_batches(4, 3, other)


def test_sample_batch_by_index_checks_as_the_host_memory(backend: str) -> None:
    rpm = fill(DeviceReplayMemory(5, 2, 0, backend=backend), 3)
    obs = host(rpm, rpm.sample_batch_by_index([2, 0]))[0]
    np.testing.assert_array_equal(obs[:, 0], [2, 0])
    index = rpm.ops.to_tensor(np.array([1, 1]), "int64")
    np.testing.assert_array_equal(host(rpm, rpm.sample_batch_by_index(index))[1], [1, 1])
    with pytest.raises(IndexError, match=r"\[0, 3\)"):
        rpm.sample_batch_by_index([3])
    with pytest.raises(IndexError, match="must hold integers"):
        rpm.sample_batch_by_index([0.5])
    with pytest.raises(IndexError, match="one-dimensional"):
        rpm.sample_batch_by_index([[0, 1]])


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda r: r.append(np.zeros(3), 0, 0.0, np.zeros(2), False), ValueError, "obs has shape"),
        (lambda r: r.append(np.zeros(2), 0.5, 0.0, np.zeros(2), False), ValueError, "integers"),
        (
            lambda r: r.append_batch(np.zeros((2, 2)), [0, 1], [0, 0, 0], np.zeros((2, 2)), [0, 0]),
            ValueError,
            r"reward has shape \(3,\), expected \(2,\)",
        ),
        (lambda r: r.sample_batch(0), ValueError, "batch_size must be an integer > 0, got 0"),
        (lambda r: r.sample_tensor_batches(4, 0), ValueError, "num_batches"),
    ],
)
def test_bad_input_gives_the_host_memorys_errors(backend: str, call, error, message) -> None:
    device = fill(DeviceReplayMemory(5, 2, 0, backend=backend), 3)
    on_host = fill(ReplayMemory(5, 2, 0), 3)
    for rpm in (device, on_host):
        with pytest.raises(error, match=message):
            call(rpm)
    assert len(device) == 3 and device._curr_pos == 3
    np.testing.assert_array_equal(stored(device, "obs"), on_host.obs)


def test_empty_memory_and_bad_sizes(backend: str) -> None:
    with pytest.raises(ValueError, match="empty ReplayMemory"):
        DeviceReplayMemory(4, 2, 0, backend=backend).sample_batch(1)
    with pytest.raises(ValueError, match="max_size must be an integer > 0, got 0"):
        DeviceReplayMemory(0, 2, 0, backend=backend)
    with pytest.raises(ValueError, match="device="):
        DeviceReplayMemory(4, 2, 0, backend=backend, device="tpu")


def test_files_are_the_host_memorys(backend: str, tmp_path: Path) -> None:
    """A device memory saves exactly what a host memory of the same content saves, and each
    loads the other's file; image observations keep their uint8 dtype."""
    shape = (2, 3, 3)
    device = DeviceReplayMemory(3, shape, 2, backend=backend, obs_dtype=np.uint8)
    on_host = ReplayMemory(3, shape, 2, obs_dtype=np.uint8)
    rng = np.random.default_rng(0)
    for _ in range(5):  # a full, wrapped ring
        obs, next_obs = rng.integers(0, 255, shape), rng.integers(0, 255, shape)
        row = (obs, rng.normal(size=2), rng.normal(), next_obs, bool(rng.integers(2)))
        device.append(*row)
        on_host.append(*row)
    device.save(tmp_path / "device")
    on_host.save(tmp_path / "host")
    with np.load(tmp_path / "device.npz") as saved, np.load(tmp_path / "host.npz") as expected:
        assert saved.files == expected.files
        for key in expected.files:
            assert saved[key].dtype == expected[key].dtype, key
            np.testing.assert_array_equal(saved[key], expected[key])
    back = DeviceReplayMemory(4, shape, 2, backend=backend, obs_dtype=np.uint8)
    back.load(tmp_path / "host.npz")
    assert len(back) == 3 and back._curr_pos == 3
    reloaded = ReplayMemory(4, shape, 2, obs_dtype=np.uint8)
    reloaded.load(tmp_path / "device.npz")
    for field in ("obs", "action", "reward", "next_obs", "terminal"):
        np.testing.assert_array_equal(stored(back, field), getattr(reloaded, field))
    assert stored(back, "obs").dtype == np.uint8


def test_a_bad_file_changes_nothing(backend: str, tmp_path: Path) -> None:
    other = ReplayMemory(5, 4, 0)
    other.append_batch(np.zeros((2, 4)), [0, 1], [0, 0], np.zeros((2, 4)), [0, 0])
    other.save(tmp_path / "other.npz")
    rpm = fill(DeviceReplayMemory(5, 2, 0, backend=backend), 3)
    before = stored(rpm, "obs").copy()
    with pytest.raises(ValueError, match=r"field 'obs' .* expects \(2, 2\)"):
        rpm.load(tmp_path / "other.npz")
    assert len(rpm) == 3
    np.testing.assert_array_equal(stored(rpm, "obs"), before)
    (tmp_path / "cut.npz").write_bytes((tmp_path / "other.npz").read_bytes()[:100])
    with pytest.raises(ValueError, match="cannot read ReplayMemory file"):
        rpm.load(tmp_path / "cut.npz")
    np.testing.assert_array_equal(stored(rpm, "obs"), before)


def test_load_from_d4rl(backend: str) -> None:
    data = {
        "observations": np.arange(6, dtype=np.float32).reshape(3, 2),
        "actions": np.array([[0.1], [0.2], [0.3]], np.float32),
        "rewards": np.array([1.0, 2.0, 3.0], np.float32),
        "next_observations": np.arange(1, 7, dtype=np.float32).reshape(3, 2),
        "terminals": np.array([False, False, True]),
    }
    rpm = DeviceReplayMemory(4, 2, 1, backend=backend)
    rpm.load_from_d4rl(data)
    assert len(rpm) == 3
    np.testing.assert_array_equal(stored(rpm, "obs")[:3], data["observations"])
    np.testing.assert_array_equal(stored(rpm, "terminal")[:3], [0.0, 0.0, 1.0])


def test_make_replay_memory_puts_it_where_asked(backend: str) -> None:
    def made(where: str, device: str = "cpu") -> ReplayMemory:
        return make_replay_memory(8, 2, 0, where=where, device=device, backend=backend, seed=0)

    assert type(made("auto")) is ReplayMemory  # the CPU: numpy, the draws of committed runs
    assert type(made("host")) is ReplayMemory
    device = made("device")
    assert isinstance(device, DeviceReplayMemory) and device.ops.BACKEND.name == backend
    with pytest.raises(ValueError, match="where must be 'auto', 'host' or 'device', got 'gpu'"):
        made("gpu")


def test_host_memorys_tensor_batches_are_made_by_the_backends_ops(backend: str) -> None:
    """ReplayMemory.sample_tensor_batches makes CPU tensors of ``backend`` with its ops, the
    draws of as many sample_batch calls."""
    one_by_one, at_once = (
        fill(ReplayMemory(5, 2, 0, seed=0), 3),
        fill(ReplayMemory(5, 2, 0, seed=0), 3),
    )
    ops = ops_of_backend(backend)
    for expected, batch in zip(
        [one_by_one.sample_batch(4) for _ in range(3)],
        at_once.sample_tensor_batches(4, 3, backend),
        strict=True,
    ):
        assert all(isinstance(field, ops.BACKEND.tensor_type) for field in batch)
        for array, tensor in zip(expected, batch, strict=True):
            np.testing.assert_array_equal(
                ops.to_numpy(tensor),
                array.astype(np.float32 if array.dtype == np.bool_ else array.dtype),
            )
