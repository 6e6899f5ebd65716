from __future__ import annotations

from pathlib import Path

from parl.utils import ReplayMemory

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
    obs, action, reward, next_obs, terminal = rpm.sample_batch(8)
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
    ("args", "message"),
    [((0, 2, 0), "max_size"), ((4, (2, -1), 0), "obs_dim"), ((4, 2, -1), "act_dim")],
)
def test_constructor_rejects_bad_dims(args, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReplayMemory(*args)


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


def test_load_reads_parl_layout(tmp_path: Path) -> None:
    # PARL saved the whole ring buffer plus other=[size, write position].
    obs = np.array([[3.0], [4.0], [2.0]], dtype=np.float32)
    np.savez(
        tmp_path / "parl.npz",
        obs=obs,
        action=np.array([3, 4, 2]),
        reward=np.zeros(3, np.float32),
        next_obs=obs,
        terminal=np.zeros(3, bool),
        other=np.array([3, 2]),
    )
    rpm = ReplayMemory(3, obs_dim=1, act_dim=0)
    rpm.load(tmp_path / "parl.npz")
    np.testing.assert_array_equal(rpm.obs[:, 0], [2, 3, 4])


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
