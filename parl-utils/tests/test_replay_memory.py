from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from parl.utils import ReplayMemory, TransitionBatch

import numpy as np
import pytest


def filled(max_size: int = 5, count: int = 3, **kwargs) -> ReplayMemory:
    rpm = ReplayMemory(max_size, obs_dim=2, act_dim=0, seed=0, **kwargs)
    for i in range(count):
        rpm.append([i, i], i, float(i), [i + 1, i + 1], i % 2 == 1)
    return rpm


def test_append_and_sample_discrete() -> None:
    rpm = filled()
    assert rpm.size() == len(rpm) == 3
    batch = rpm.sample_batch(8)
    assert isinstance(batch, TransitionBatch) and batch.obs is batch[0]
    obs, action, reward, next_obs, terminal = batch
    np.testing.assert_array_equal(batch.terminal, terminal)
    assert obs.shape == next_obs.shape == (8, 2) and obs.dtype == np.float32
    assert action.shape == (8,) and action.dtype == np.int64
    assert reward.shape == terminal.shape == (8,) and terminal.dtype == np.bool_
    np.testing.assert_array_equal(obs[:, 0], action)
    np.testing.assert_array_equal(next_obs[:, 0], action + 1)
    np.testing.assert_array_equal(terminal, action % 2 == 1)


def test_continuous_actions_and_image_obs() -> None:
    rpm = ReplayMemory(4, obs_dim=(3, 8, 8), act_dim=2, obs_dtype=np.uint8)
    rpm.append(np.ones((3, 8, 8)), [0.5, -0.5], 1.0, np.zeros((3, 8, 8)), False)
    obs, action, *_ = rpm.sample_batch(2)
    assert obs.shape == (2, 3, 8, 8) and obs.dtype == np.uint8
    np.testing.assert_array_equal(action, [[0.5, -0.5], [0.5, -0.5]])


def test_ring_overwrites_oldest() -> None:
    rpm = filled(max_size=3, count=5)
    assert len(rpm) == 3
    assert sorted(rpm.obs[:, 0]) == [2.0, 3.0, 4.0]


def test_same_seed_same_samples() -> None:
    first, second = filled(), filled()
    np.testing.assert_array_equal(first.make_index(10), second.make_index(10))


def test_append_batch_wraps_and_keeps_newest() -> None:
    rpm = ReplayMemory(4, obs_dim=1, act_dim=1)
    rpm.append_batch(np.arange(3)[:, None], np.arange(3), np.arange(3), np.zeros((3, 1)), [0, 0, 1])
    rpm.append_batch(
        np.arange(3, 9)[:, None], np.arange(3, 9), np.arange(3, 9), np.zeros((6, 1)), np.zeros(6)
    )
    assert len(rpm) == 4
    np.testing.assert_array_equal(np.sort(rpm.obs[:, 0]), [5, 6, 7, 8])
    np.testing.assert_array_equal(rpm.action[:, 0], rpm.obs[:, 0])
    np.testing.assert_array_equal(rpm.reward, rpm.obs[:, 0])


def test_sample_by_index_and_bad_index() -> None:
    rpm = filled()
    obs, *_ = rpm.sample_batch_by_index([2, 0])
    np.testing.assert_array_equal(obs[:, 0], [2, 0])
    with pytest.raises(IndexError, match=r"\[0, 3\)"):
        rpm.sample_batch_by_index([3])


@pytest.mark.parametrize(
    ("obs", "act", "message"),
    [
        (np.zeros(3), 0, r"obs has shape \(3,\), expected \(2,\)"),
        (np.zeros(2), [0, 1], r"action has shape \(2,\), expected \(\)"),
        (np.zeros(2), 0.5, "discrete actions must be integers"),
    ],
)
def test_append_rejects_bad_input(obs, act, message: str) -> None:
    rpm = filled()
    with pytest.raises(ValueError, match=message):
        rpm.append(obs, act, 0.0, np.zeros(2), False)
    assert len(rpm) == 3


def test_append_batch_rejects_mismatched_batch() -> None:
    rpm = ReplayMemory(4, obs_dim=2, act_dim=0)
    with pytest.raises(ValueError, match=r"reward has shape \(3,\), expected \(2,\)"):
        rpm.append_batch(np.zeros((2, 2)), [0, 1], [0, 0, 0], np.zeros((2, 2)), [0, 0])
    with pytest.raises(ValueError, match="leading batch axis"):
        rpm.append_batch(1.0, 0, 0, 0, 0)


def test_sampling_empty_memory_raises() -> None:
    with pytest.raises(ValueError, match="empty ReplayMemory"):
        ReplayMemory(4, 2, 0).sample_batch(1)
    with pytest.raises(ValueError, match="batch_size must be an integer > 0, got 0"):
        filled().sample_batch(0)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0, 2, 0), {}, "max_size must be an integer > 0, got 0"),
        ((True, 2, 0), {}, "max_size must be an integer > 0, got True"),
        ((1e6, 2, 0), {}, "max_size must be an integer > 0, got 1000000.0"),
        ((4, (2, -1), 0), {}, r"obs_dim\[1\] must be an integer > 0, got -1"),
        ((4, (), 0), {}, "obs_dim must not be empty"),
        ((4, 2, -1), {}, "act_dim must be an integer >= 0, got -1"),
        ((4, 2, 0.5), {}, "act_dim must be an integer >= 0, got 0.5"),
        ((4, 2, 0), {"seed": -1}, "seed must be an integer >= 0, got -1"),
    ],
)
def test_constructor_rejects_bad_dims(args, kwargs, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReplayMemory(*args, **kwargs)


def test_numpy_integers_are_accepted() -> None:
    rpm = ReplayMemory(np.int64(4), obs_dim=[np.int32(2)], act_dim=np.uint8(0), seed=np.int64(1))
    assert rpm.max_size == 4 and rpm.obs_shape == (2,)


def test_save_load_round_trip(tmp_path: Path) -> None:
    rpm = filled(max_size=3, count=5)
    rpm.save(tmp_path / "rpm.npz")
    restored = ReplayMemory(10, obs_dim=2, act_dim=0)
    restored.load(tmp_path / "rpm.npz")
    assert len(restored) == 3
    # Saved oldest first, so later appends continue after the newest transition.
    np.testing.assert_array_equal(restored.obs[:3, 0], [2, 3, 4])
    np.testing.assert_array_equal(restored.action[:3], [2, 3, 4])
    np.testing.assert_array_equal(restored.terminal[:3], [False, True, False])
    restored.append([9, 9], 9, 9.0, [9, 9], False)
    np.testing.assert_array_equal(restored.obs[:4, 0], [2, 3, 4, 9])
    assert not list(tmp_path.glob("*.tmp"))


def parl_file(path: Path, max_size: int, rows: list[int], pos: int, act_dim: int = 0) -> Path:
    """Write what PARL 2.x's ReplayMemory.save writes: the whole max_size ring, other=[size, pos].

    Row ``i`` holds obs ``[rows[i]]``; discrete actions are int32 ``[max_size]``, continuous
    ones float32 ``[max_size, act_dim]``; rows past ``size`` are zeros.
    """
    obs = np.zeros((max_size, 1), np.float32)
    obs[: len(rows), 0] = rows
    if act_dim:
        action = np.zeros((max_size, act_dim), np.float32)
        action[: len(rows)] = np.asarray(rows)[:, None] / 10
    else:
        action = np.zeros((max_size,), np.int32)
        action[: len(rows)] = rows
    reward = obs[:, 0] * 2
    np.savez(
        path,
        obs=obs,
        action=action,
        reward=reward,
        terminal=obs[:, 0] > 2,
        next_obs=obs + 1,
        other=np.array([len(rows), pos], dtype=np.int32),
    )
    return path


def test_load_reads_parl_files_full_ring(tmp_path: Path) -> None:
    # A full ring of 3 whose next write goes to row 2: the oldest transition is in row 2.
    rpm = ReplayMemory(3, obs_dim=1, act_dim=0)
    rpm.load(parl_file(tmp_path / "parl.npz", 3, [3, 4, 2], pos=2))
    np.testing.assert_array_equal(rpm.obs[:, 0], [2, 3, 4])
    np.testing.assert_array_equal(rpm.action, [2, 3, 4])
    np.testing.assert_array_equal(rpm.next_obs[:, 0], [3, 4, 5])
    np.testing.assert_array_equal(rpm.terminal, [False, True, True])


def test_load_reads_parl_files_padded_to_their_max_size(tmp_path: Path) -> None:
    # PARL's max_size was 1000 but it held 2 transitions: only those rows are read.
    rpm = ReplayMemory(5, obs_dim=1, act_dim=2)
    rpm.load(parl_file(tmp_path / "parl.npz", 1000, [7, 8], pos=2, act_dim=2))
    assert len(rpm) == 2
    np.testing.assert_allclose(rpm.action[:2], [[0.7, 0.7], [0.8, 0.8]])
    rpm.append([9], [0.9, 0.9], 1.0, [10], False)
    np.testing.assert_array_equal(rpm.obs[:3, 0], [7, 8, 9])


def test_save_writes_parl_layout(tmp_path: Path) -> None:
    rpm = filled(max_size=3, count=5)  # full ring, next write at row 2
    written = rpm.save(tmp_path / "rpm")
    assert written == tmp_path / "rpm.npz"  # numpy.savez (so PARL) appends .npz
    with zipfile.ZipFile(written) as archive:
        assert archive.namelist() == [
            f"{key}.npy" for key in ("obs", "action", "reward", "terminal", "next_obs", "other")
        ]
    with np.load(written, allow_pickle=False) as data:
        assert data["other"].dtype == np.int32
        np.testing.assert_array_equal(data["other"], [3, 2])
        np.testing.assert_array_equal(data["obs"][:, 0], [3, 4, 2])  # ring order, as PARL
        assert data["terminal"].dtype == np.bool_ and data["reward"].dtype == np.float32
    assert oct(written.stat().st_mode & 0o777) == "0o600"
    # A partly filled memory writes its rows only; PARL reads [:size] and the position.
    partial = filled(max_size=100, count=2).save(tmp_path / "partial.npz")
    with np.load(partial) as data:
        assert data["obs"].shape == (2, 2)
        np.testing.assert_array_equal(data["other"], [2, 2])


def test_save_removes_temporaries_of_killed_writers(tmp_path: Path) -> None:
    writer = subprocess.Popen(["true"])
    writer.wait()  # a writer that is gone, leaving its temporary file behind
    orphan = tmp_path / f".rpm.npz.{writer.pid}.abc123.tmp"
    orphan.write_bytes(b"half a file")
    filled().save(tmp_path / "rpm.npz")
    assert not orphan.exists()


def test_load_mismatched_shape_leaves_memory_unchanged(tmp_path: Path) -> None:
    ReplayMemory(5, obs_dim=4, act_dim=0).save(tmp_path / "other.npz")
    other = ReplayMemory(5, obs_dim=4, act_dim=0)
    other.append(np.zeros(4), 0, 0.0, np.zeros(4), False)
    other.save(tmp_path / "other.npz")
    rpm = filled()
    before = rpm.obs.copy()
    with pytest.raises(ValueError, match=r"field 'obs' .* shape \(1, 4\), .* expects \(1, 2\)"):
        rpm.load(tmp_path / "other.npz")
    assert len(rpm) == 3
    np.testing.assert_array_equal(rpm.obs, before)


class Boom:
    def __reduce__(self):
        return (print, ("unpickled!",))


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"obs": np.array([Boom()], dtype=object)}, "obs.npy holds Python objects"),
        ({"extra": np.zeros(1)}, r"unexpected entries \['extra.npy'\]"),
        ({"other": np.array([1, 1, 1], np.int32)}, "malformed 'other' entry"),
        ({"other": np.array([1.0, 1.0])}, "malformed 'other' entry"),
        ({"other": np.array([4, 0], np.int32)}, r"other = \[size=4, position=0\] does not fit"),
        ({"other": np.array([2, 0], np.int32)}, r"position == size unless the ring is full"),
        ({"other": np.array([-1, 0], np.int32)}, "does not fit its 3 rows"),
        ({"action": np.zeros(3, np.float32)}, "field 'action' .* dtype float32, which cannot"),
        ({"terminal": np.zeros(3, np.float32)}, "field 'terminal' .* dtype float32"),
        ({"reward": np.zeros((3, 1), np.float32)}, r"field 'reward' .* shape \(3, 1\)"),
    ],
)
def test_load_rejects_bad_files_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arrays: dict, message: str
) -> None:
    path = parl_file(tmp_path / "good.npz", 3, [1, 2, 3], pos=0)
    with np.load(path) as data:
        content = {key: data[key] for key in data.files}
    np.savez(tmp_path / "bad.npz", **{**content, **arrays})
    rpm = ReplayMemory(5, obs_dim=1, act_dim=0)
    for i in range(2):
        rpm.append([i], i, 0.0, [i], False)
    before = {field: getattr(rpm, field).copy() for field in ("obs", "action", "terminal")}
    with pytest.raises(ValueError, match=message):
        rpm.load(tmp_path / "bad.npz")
    assert len(rpm) == 2 and rpm._curr_pos == 2
    for field, array in before.items():
        np.testing.assert_array_equal(getattr(rpm, field), array)
    assert "unpickled!" not in capsys.readouterr().out


def test_load_truncated_data(tmp_path: Path) -> None:
    path = parl_file(tmp_path / "parl.npz", 3, [1, 2, 3], pos=0)
    with np.load(path) as data:
        content = {key: data[key] for key in data.files}
    # A stored obs array claiming 3 rows but holding the bytes of 2.
    header = np.lib.format.header_data_from_array_1_0(content["obs"])
    with zipfile.ZipFile(tmp_path / "cut.npz", "w") as archive:
        for key, array in content.items():
            with archive.open(f"{key}.npy", "w") as member:
                if key == "obs":
                    np.lib.format.write_array_header_1_0(member, header)
                    member.write(array[:2].tobytes())
                else:
                    np.lib.format.write_array(member, array)
    with pytest.raises(ValueError, match=r"obs.npy is truncated \(8 of 12 bytes\)"):
        ReplayMemory(5, obs_dim=1, act_dim=0).load(tmp_path / "cut.npz")


def test_load_too_many_transitions(tmp_path: Path) -> None:
    filled(max_size=5, count=5).save(tmp_path / "big.npz")
    with pytest.raises(ValueError, match="holds 5 transitions but this memory has max_size=2"):
        ReplayMemory(2, obs_dim=2, act_dim=0).load(tmp_path / "big.npz")


def test_load_corrupted_file_leaves_memory_unchanged(tmp_path: Path) -> None:
    filled().save(tmp_path / "rpm.npz")
    data = (tmp_path / "rpm.npz").read_bytes()
    (tmp_path / "rpm.npz").write_bytes(data[: len(data) // 2])
    rpm = filled(count=2)
    with pytest.raises(ValueError, match="cannot read ReplayMemory file"):
        rpm.load(tmp_path / "rpm.npz")
    assert len(rpm) == 2
    np.savez(tmp_path / "partial.npz", obs=np.zeros((1, 2)))
    with pytest.raises(ValueError, match=r"fields \['action'"):
        rpm.load(tmp_path / "partial.npz")
    assert len(rpm) == 2


def test_save_failure_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    filled(count=1).save(tmp_path / "rpm.npz")
    old = (tmp_path / "rpm.npz").read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(OSError, match="disk full"):
        filled(count=3).save(tmp_path / "rpm.npz")
    assert (tmp_path / "rpm.npz").read_bytes() == old
    assert not list(tmp_path.glob("*.tmp"))


def test_sample_tensor_batches_draws_as_sample_batch_does() -> None:
    paddle = pytest.importorskip("paddle", reason="tensor batches need paddle")
    one_by_one, at_once = filled(), filled()  # both seeded with 0
    expected = [one_by_one.sample_batch(4) for _ in range(3)]
    batches = at_once.sample_tensor_batches(4, 3)
    assert len(batches) == 3
    for numpy_batch, tensor_batch in zip(expected, batches, strict=True):
        assert isinstance(tensor_batch.obs, paddle.Tensor)
        assert tensor_batch.terminal.dtype == paddle.float32
        assert tensor_batch.action.dtype == paddle.int64
        for array, tensor in zip(numpy_batch, tensor_batch, strict=True):
            np.testing.assert_array_equal(tensor.numpy(), array.astype(tensor.numpy().dtype))


def test_sample_tensor_batches_refuses_bad_sizes() -> None:
    pytest.importorskip("paddle", reason="tensor batches need paddle")
    with pytest.raises(ValueError, match="num_batches"):
        filled().sample_tensor_batches(4, 0)
    with pytest.raises(ValueError, match="empty"):
        ReplayMemory(4, 2, 0).sample_tensor_batches(4, 2)


def _with_compression_method(data: bytes, method: int) -> bytes:
    """A zip archive's bytes with every entry's compression method set to ``method``."""
    patched = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        start = patched.find(signature)
        while start != -1:
            patched[start + offset : start + offset + 2] = method.to_bytes(2, "little")
            start = patched.find(signature, start + 4)
    return bytes(patched)


def test_load_of_an_unknown_compression_is_a_value_error(tmp_path: Path) -> None:
    filled().save(tmp_path / "rpm.npz")
    path = tmp_path / "rpm.npz"
    path.write_bytes(_with_compression_method(path.read_bytes(), 99))  # 99: AES, unsupported
    rpm = filled(count=2)
    with pytest.raises(ValueError, match="plain or deflated entries"):
        rpm.load(path)
    assert len(rpm) == 2
