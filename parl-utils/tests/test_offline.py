"""Offline datasets: the builder, the HDF5 and Minari loaders, and ReplayMemory.load_from_d4rl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from parl.core.errors import DatasetError
from parl.env import ActionMappingWrapper
from parl.utils import ReplayMemory, make_vector_env
from parl.utils.offline import (
    DATASET_KEYS,
    DatasetRecorder,
    check_dataset,
    collect,
    concatenate,
    dataset_digest,
    dataset_env_spec,
    episode_returns,
    load_d4rl_hdf5,
    load_minari,
    make_dataset_env,
    save_d4rl_hdf5,
)

import gymnasium as gym
import h5py
import numpy as np
import pytest


def pendulum_envs() -> gym.vector.VectorEnv:
    return make_vector_env(lambda: ActionMappingWrapper(gym.make("Pendulum-v1")), 1)


def random_policy(seed: int):
    rng = np.random.default_rng(seed)
    return lambda obs: rng.uniform(-1, 1, (len(obs), 1)).astype(np.float32)


@pytest.fixture(scope="module")
def pendulum() -> dict[str, np.ndarray]:
    """250 random steps of Pendulum-v1: one episode cut at 200 steps and a partial one."""
    return collect(pendulum_envs(), random_policy(0), 250, seed=0)


def parl2_dict(rows: int = 6) -> dict[str, np.ndarray]:
    """PARL 2.x's layout: five keys, no timeouts."""
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(rows, 3)).astype(np.float32)
    return {
        "observations": obs,
        "actions": rng.uniform(-1, 1, (rows, 2)).astype(np.float32),
        "rewards": rng.normal(size=rows).astype(np.float32),
        "next_observations": obs + 1,
        "terminals": np.arange(rows) % 3 == 2,
    }


def test_builder_keeps_truncation_apart_from_termination(pendulum) -> None:
    assert sorted(pendulum) == sorted(DATASET_KEYS) and len(pendulum["rewards"]) == 250
    assert not pendulum["terminals"].any()
    np.testing.assert_array_equal(np.flatnonzero(pendulum["timeouts"]), [199])
    # next_observations is the real next state: the next row's observation inside an episode,
    # the episode's final observation (not the reset one) where the time limit cut it.
    np.testing.assert_array_equal(
        pendulum["next_observations"][:199], pendulum["observations"][1:200]
    )
    assert not np.allclose(pendulum["next_observations"][199], pendulum["observations"][200])
    assert np.abs(pendulum["actions"]).max() <= 1.0
    returns = episode_returns(pendulum)
    assert returns.shape == (1,)
    assert returns[0] == pytest.approx(pendulum["rewards"][:200].sum(), rel=1e-5)


def test_policy_mix_concatenates() -> None:
    zero = collect(pendulum_envs(), lambda obs: np.zeros((len(obs), 1), np.float32), 20, seed=1)
    mixed = concatenate([zero, collect(pendulum_envs(), random_policy(1), 30, seed=2)])
    assert len(mixed["rewards"]) == 50 and not mixed["actions"][:20].any()
    assert mixed["actions"][20:].any()


def test_hdf5_round_trip_into_a_replay_memory(pendulum, tmp_path: Path) -> None:
    path = save_d4rl_hdf5(pendulum, tmp_path / "pendulum-random.hdf5")
    loaded = load_d4rl_hdf5(path)
    assert sorted(loaded) == sorted(pendulum)
    for key in DATASET_KEYS:
        np.testing.assert_array_equal(loaded[key], pendulum[key])
    rpm = ReplayMemory(1000, obs_dim=3, act_dim=1, seed=0)
    rpm.load_from_d4rl(loaded)
    assert len(rpm) == 250
    obs, action, reward, next_obs, terminal = rpm.sample_batch_by_index(np.arange(250))
    np.testing.assert_array_equal(obs, pendulum["observations"])
    np.testing.assert_array_equal(action, pendulum["actions"])
    np.testing.assert_array_equal(reward, pendulum["rewards"])
    np.testing.assert_array_equal(next_obs, pendulum["next_observations"])
    np.testing.assert_array_equal(terminal, pendulum["terminals"])


def test_a_dataset_digest_names_its_contents_not_its_file(pendulum, tmp_path: Path) -> None:
    digest = dataset_digest(pendulum)
    assert len(digest) == 64 and int(digest, 16) >= 0
    saved = load_d4rl_hdf5(save_d4rl_hdf5(pendulum, tmp_path / "saved.hdf5"))
    # The same transitions in another file: keys in reverse order, gzip-compressed chunks,
    # observations as float64 and flags as 0/1 integers; its bytes differ, its contents do not.
    other, widened = tmp_path / "other.hdf5", {"terminals": np.uint8, "timeouts": np.uint8}
    widened |= {"observations": np.float64, "next_observations": np.float64}
    with h5py.File(other, "w") as file:
        for key in reversed(DATASET_KEYS):
            array = pendulum[key].astype(widened.get(key, pendulum[key].dtype))
            file.create_dataset(key, data=array, compression="gzip", chunks=True)
    assert other.read_bytes() != (tmp_path / "saved.hdf5").read_bytes()
    assert dataset_digest(saved) == dataset_digest(load_d4rl_hdf5(other)) == digest
    assert dataset_digest(dict(reversed(pendulum.items()))) == digest
    # PARL 2.x's dicts have no timeouts: they hash as all-False ones (what every loader makes).
    no_timeouts = parl2_dict()
    assert dataset_digest(no_timeouts) == dataset_digest(no_timeouts | {"timeouts": np.zeros(6)})

    changed = {key: value.copy() for key, value in pendulum.items()}
    changed["rewards"][17] = np.nextafter(changed["rewards"][17], np.float32(0))
    assert dataset_digest(changed) != digest, "one reward one ulp apart"
    assert dataset_digest({key: value[:-1] for key, value in pendulum.items()}) != digest
    moved = pendulum | {"timeouts": np.roll(pendulum["timeouts"], 1)}
    assert dataset_digest(moved) != digest, "an episode end one row later"


def test_d4rl_raw_file_gets_next_observations_like_qlearning_dataset(tmp_path: Path) -> None:
    obs = np.arange(12, dtype=np.float32).reshape(6, 2)
    path = tmp_path / "raw.hdf5"
    with h5py.File(path, "w") as file:
        file["observations"] = obs
        file["actions"] = np.zeros((6, 1), np.float32)
        file["rewards"] = np.arange(6, dtype=np.float32)
        file["terminals"] = np.array([0, 0, 0, 0, 1, 0], bool)
        file["timeouts"] = np.array([0, 1, 0, 0, 0, 0], bool)
    data = load_d4rl_hdf5(path)
    # Row 1 timed out (its next row is a reset) and row 5 is the file's last: both dropped.
    np.testing.assert_array_equal(data["rewards"], [0, 2, 3, 4])
    np.testing.assert_array_equal(data["next_observations"], obs[[1, 3, 4, 5]])
    np.testing.assert_array_equal(data["terminals"], [0, 0, 0, 1])


def test_load_from_d4rl_takes_parl2_dicts() -> None:
    data = parl2_dict()
    rpm = ReplayMemory(10, obs_dim=3, act_dim=2, seed=0)
    rpm.load_from_d4rl(data)
    assert rpm.size() == 6
    batch = rpm.sample_batch_by_index(np.arange(6))
    np.testing.assert_array_equal(batch.reward, data["rewards"])
    np.testing.assert_array_equal(batch.terminal, data["terminals"])
    rpm.append(np.zeros(3), np.zeros(2), 0.0, np.zeros(3), False)  # writes after the dataset
    assert rpm.size() == 7


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"rewards": np.zeros(5, np.float32)}, ValueError, r"'rewards' has shape \(5,\)"),
        ({"observations": np.zeros((6, 4), np.float32)}, ValueError, "next_observations"),
        ({"actions": np.zeros((6, 3), np.float32)}, ValueError, r"action has shape \(6, 3\)"),
        ({"terminals": None}, ValueError, r"lacks \['terminals'\]"),
        ({"rewards": np.array(["x"] * 6)}, ValueError, "'rewards' must hold numbers"),
        ({"rewards": np.full(6, np.nan, np.float32)}, ValueError, "NaN"),
    ],
)
def test_load_from_d4rl_refuses_bad_datasets_and_changes_nothing(change, error, match) -> None:
    rpm = ReplayMemory(10, obs_dim=3, act_dim=2, seed=0)
    rpm.append(np.ones(3), np.ones(2) / 2, 1.0, np.ones(3), True)
    data = {k: v for k, v in {**parl2_dict(), **change}.items() if v is not None}
    with pytest.raises(error, match=match):
        rpm.load_from_d4rl(data)
    assert rpm.size() == 1 and rpm.obs[0, 0] == 1.0 and rpm.reward[0] == 1.0


def test_load_from_d4rl_refuses_more_rows_than_max_size() -> None:
    rpm = ReplayMemory(4, obs_dim=3, act_dim=2)
    with pytest.raises(ValueError, match="max_size >= 6"):
        rpm.load_from_d4rl(parl2_dict())
    assert rpm.size() == 0


def test_truncated_hdf5_is_refused(pendulum, tmp_path: Path) -> None:
    path = save_d4rl_hdf5(pendulum, tmp_path / "data.hdf5")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match="truncated or not an HDF5 file"):
        load_d4rl_hdf5(path)
    (tmp_path / "text.hdf5").write_text("observations,actions\n")
    with pytest.raises(ValueError, match="cannot read"):
        load_d4rl_hdf5(tmp_path / "text.hdf5")


def test_wrong_shaped_hdf5_is_refused(tmp_path: Path) -> None:
    data = parl2_dict()
    path = tmp_path / "bad.hdf5"
    with h5py.File(path, "w") as file:
        for key, value in data.items():
            file[key] = value[:-1] if key == "terminals" else value
    with pytest.raises(ValueError, match=r"'terminals' has shape \(5,\), expected \(6,\)"):
        load_d4rl_hdf5(path)
    with h5py.File(path, "w") as file:
        for key, value in data.items():
            file[key] = value
        del file["actions"]
        file["actions"] = np.array([b"a"] * 6)
    with pytest.raises(ValueError, match="'actions' holds"):
        load_d4rl_hdf5(path)


def test_hdf5_links_to_other_files_are_refused(pendulum, tmp_path: Path) -> None:
    other = save_d4rl_hdf5(pendulum, tmp_path / "other.hdf5")
    path = tmp_path / "linked.hdf5"
    with h5py.File(path, "w") as file:
        for key in DATASET_KEYS:
            file[key] = h5py.ExternalLink(str(other), key)
    with pytest.raises(ValueError, match="link to other files"):
        load_d4rl_hdf5(path)


def test_hdf5_size_is_bounded_and_missing_file_says_where_to_get_data(pendulum, tmp_path) -> None:
    path = save_d4rl_hdf5(pendulum, tmp_path / "data.hdf5")
    with pytest.raises(ValueError, match="over max_bytes=1000"):
        load_d4rl_hdf5(path, max_bytes=1000)
    with pytest.raises(FileNotFoundError, match="minari download"):
        load_d4rl_hdf5(tmp_path / "nowhere.hdf5")
    with pytest.raises(FileNotFoundError, match="minari download"):
        load_minari(tmp_path / "nowhere")


def write_minari(pendulum: dict[str, np.ndarray], root: Path, monkeypatch) -> Path:
    """A Minari dataset of the first 220 pendulum steps, written by minari itself."""
    import minari  # parl-utils[offline], which the test group installs
    from minari.data_collector.episode_buffer import EpisodeBuffer

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    # Minari stores an episode as T+1 observations: the pendulum's first, timed-out episode,
    # and the first 20 steps of the next one, still running.
    episodes = []
    for index, (start, stop) in enumerate([(0, 200), (200, 220)]):
        rows = slice(start, stop)
        observations = np.concatenate(
            [pendulum["observations"][rows], pendulum["next_observations"][stop - 1 : stop]]
        )
        episodes.append(
            EpisodeBuffer(
                id=index,
                observations=observations,
                actions=pendulum["actions"][rows],
                rewards=list(pendulum["rewards"][rows]),
                terminations=list(pendulum["terminals"][rows]),
                truncations=list(pendulum["timeouts"][rows]),
            )
        )
    env = ActionMappingWrapper(gym.make("Pendulum-v1"))
    minari.create_dataset_from_buffers(
        "parl/pendulum/random-v0",
        episodes,
        env=env,
        eval_env="Pendulum-v1",
        algorithm_name="uniform random",
        author="PARL tests",
        author_email="none",
        code_permalink="none",
        description="random Pendulum-v1 steps",
    )
    return root / "parl" / "pendulum" / "random-v0"


def test_minari_dataset_on_disk_loads(pendulum, tmp_path: Path, monkeypatch) -> None:
    loaded = load_minari(write_minari(pendulum, tmp_path, monkeypatch))
    assert len(loaded["rewards"]) == 220
    for key in DATASET_KEYS:
        np.testing.assert_allclose(loaded[key], pendulum[key][:220], rtol=1e-6)


def test_check_dataset_needs_rows() -> None:
    with pytest.raises(ValueError, match="N >= 1"):
        check_dataset({**parl2_dict(), "observations": np.zeros((0, 3))})
    with pytest.raises(ValueError, match="empty"):
        DatasetRecorder().to_dict()


# -- hostile datasets -------------------------------------------------------------------------


def _spec_running(command: list[str]) -> str:
    """An env spec whose entry point runs ``command`` when anything builds it."""
    spec = {
        "id": "Probe-v0",
        "entry_point": "subprocess:run",
        "kwargs": {"args": command},
        "additional_wrappers": [],
    }
    return json.dumps(spec, separators=(",", ":"))  # no spaces: Minari's own edits skip it


def test_a_minari_dataset_never_runs_its_env_spec(pendulum, tmp_path: Path, monkeypatch) -> None:
    path = write_minari(pendulum, tmp_path, monkeypatch)
    marker = tmp_path / "ran"
    metadata_path = path / "data" / "metadata.json"
    metadata = json.loads(metadata_path.read_text())
    del metadata["observation_space"], metadata["action_space"]  # Minari then calls gym.make
    metadata["env_spec"] = _spec_running(["touch", str(marker)])
    metadata["eval_env_spec"] = _spec_running(["touch", str(marker)]).replace(
        "subprocess:run", "no_such_module:Env"
    )
    metadata_path.write_text(json.dumps(metadata, separators=(",", ":")))
    assert len(load_minari(path)["rewards"]) == 220
    spec = dataset_env_spec(path)
    assert spec["entry_point"] == "subprocess:run"
    with pytest.raises(DatasetError, match="'subprocess:run' is not on the allow-list"):
        make_dataset_env(spec)
    with pytest.raises(DatasetError, match="'no_such_module:Env' is not on the allow-list"):
        make_dataset_env(dataset_env_spec(path, eval_env=True))
    assert not marker.exists()


def test_a_dataset_env_spec_on_the_allow_list_builds(pendulum, tmp_path, monkeypatch) -> None:
    path = write_minari(pendulum, tmp_path, monkeypatch)
    env = make_dataset_env(dataset_env_spec(path, eval_env=True))
    assert env.spec.id == "Pendulum-v1" and env.observation_space.shape == (3,)
    env.close()


def _d4rl_with(path: Path, pendulum, key: str, make) -> Path:
    """A D4RL file whose ``key`` is made by ``make(file, key, array)``, the others plain."""
    with h5py.File(path, "w") as file:
        for name in DATASET_KEYS:
            if name == key:
                make(file, name, pendulum[name])
            else:
                file.create_dataset(name, data=pendulum[name])
    return path


def test_hdf5_external_storage_is_refused(pendulum, tmp_path: Path) -> None:
    secret = tmp_path / "secret"  # another file the loader could be made to read
    secret.write_bytes(np.arange(250, dtype=np.float32).tobytes())
    secret.chmod(0o600)
    path = _d4rl_with(
        tmp_path / "external.hdf5",
        pendulum,
        "rewards",
        lambda f, k, a: f.create_dataset(k, (250,), "f4", external=[(str(secret), 0, 1000)]),
    )
    with pytest.raises(DatasetError, match="'rewards' keeps its bytes in external files"):
        load_d4rl_hdf5(path)


def test_hdf5_virtual_dataset_is_refused(pendulum, tmp_path: Path) -> None:
    other = save_d4rl_hdf5(pendulum, tmp_path / "other.hdf5")

    def virtual(file, key, array) -> None:
        layout = h5py.VirtualLayout(shape=array.shape, dtype=array.dtype)
        layout[:] = h5py.VirtualSource(str(other), key, shape=array.shape)
        file.create_virtual_dataset(key, layout)

    path = _d4rl_with(tmp_path / "virtual.hdf5", pendulum, "observations", virtual)
    with pytest.raises(DatasetError, match="'observations' is a virtual dataset"):
        load_d4rl_hdf5(path)


LOAD_IN_A_CHILD = (
    "import sys; from parl.utils.offline import load_d4rl_hdf5\n"
    "try:\n    load_d4rl_hdf5(sys.argv[1])\nexcept ValueError as exc:\n    print(exc)\n"
)


def test_hdf5_external_storage_in_a_fifo_does_not_block(pendulum, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    path = _d4rl_with(
        tmp_path / "fifo.hdf5",
        pendulum,
        "rewards",
        lambda f, k, a: f.create_dataset(k, (250,), "f4", external=[(str(fifo), 0, 1000)]),
    )
    done = subprocess.run(
        [sys.executable, "-c", LOAD_IN_A_CHILD, str(path)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "keeps its bytes in external files" in done.stdout


def test_hdf5_soft_link_is_refused(pendulum, tmp_path: Path) -> None:
    path = _d4rl_with(
        tmp_path / "soft.hdf5",
        pendulum,
        "next_observations",
        lambda f, k, a: f.__setitem__(k, h5py.SoftLink("/observations")),
    )
    with pytest.raises(DatasetError, match="'next_observations' is a SoftLink"):
        load_d4rl_hdf5(path)


def test_declared_size_is_checked_against_stored_bytes_before_reading(tmp_path) -> None:
    path = tmp_path / "sparse.hdf5"
    with h5py.File(path, "w") as file:  # 1 GiB declared, no chunk ever written
        file.create_dataset("observations", (2**26, 4), "f4", chunks=(1024, 4))
        for key in ("actions", "next_observations"):
            file.create_dataset(key, (2**26, 4), "f4", chunks=(1024, 4))
        for key in ("rewards", "terminals"):
            file.create_dataset(key, (2**26,), "f4", chunks=(1024,))
    assert path.stat().st_size < 16 * 1024
    with pytest.raises(
        DatasetError,
        match=r"'\w+' declares \d+ bytes but stores 0: its chunks were never written",
    ):
        load_d4rl_hdf5(path)


def test_declared_sizes_are_refused_before_any_array_is_read(tmp_path: Path, monkeypatch) -> None:
    """A file declaring 1 GiB it does not hold, and one whose arrays are stored (deflated
    zeros, 88 MiB in all) but over max_bytes, are refused by their declared sizes alone: any
    read of an array fails this test (a 2 KiB file declaring 1 GiB once peaked at 1.7 GB
    before the limit acted)."""
    sparse = tmp_path / "sparse.hdf5"
    with h5py.File(sparse, "w") as file:
        for key in ("observations", "actions", "next_observations"):
            file.create_dataset(key, (2**26, 4), "f4", chunks=(1024, 4))
        for key in ("rewards", "terminals"):
            file.create_dataset(key, (2**26,), "f4", chunks=(1024,))
    stored = tmp_path / "stored.hdf5"
    with h5py.File(stored, "w") as file:
        for key, shape in [("observations", (2**21, 4)), ("next_observations", (2**21, 4))]:
            file.create_dataset(key, data=np.zeros(shape, "f4"), compression="gzip")
        for key in ("actions", "rewards", "terminals"):
            file.create_dataset(key, data=np.zeros(2**21, "f4"), compression="gzip")

    def no_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("an array was read before the file was refused")

    monkeypatch.setattr(h5py.Dataset, "__getitem__", no_read)
    monkeypatch.setattr(h5py.Dataset, "read_direct", no_read)
    with pytest.raises(DatasetError, match="declares 1073741824 bytes but stores 0"):
        load_d4rl_hdf5(sparse)
    with pytest.raises(
        DatasetError, match="declares 92274688 bytes of arrays, over max_bytes=67108864"
    ):
        load_d4rl_hdf5(stored, max_bytes=64 * 2**20)


def test_nan_terminals_are_refused(tmp_path: Path) -> None:
    data = parl2_dict()
    data["terminals"] = np.array([0.0, np.nan, 1.0, 0.0, 0.0, 1.0])
    with pytest.raises(DatasetError, match="'terminals' must hold only 0 and 1"):
        check_dataset(data)


def test_nan_timeouts_of_a_raw_d4rl_file_are_refused(tmp_path: Path) -> None:
    """A raw file's timeouts decide which rows are dropped: a NaN read as True dropped one."""
    path = tmp_path / "raw.hdf5"
    with h5py.File(path, "w") as file:
        file["observations"] = np.zeros((6, 2), np.float32)
        file["actions"] = np.zeros((6, 1), np.float32)
        file["rewards"] = np.zeros(6, np.float32)
        file["terminals"] = np.zeros(6, np.float32)
        file["timeouts"] = np.array([0, np.nan, 0, 0, 0, 0], np.float32)
    with pytest.raises(DatasetError, match=r"raw.hdf5: 'timeouts' must hold only 0 and 1"):
        load_d4rl_hdf5(path)


@pytest.mark.parametrize("key", ["terminations", "truncations"])
def test_nan_terminations_of_a_minari_dataset_are_refused(
    pendulum, tmp_path: Path, monkeypatch, key: str
) -> None:
    root = write_minari(pendulum, tmp_path, monkeypatch)
    with h5py.File(root / "data" / "main_data.hdf5", "r+") as file:
        flags = file[f"episode_0/{key}"][()].astype(np.float32)
        flags[3] = np.nan
        del file[f"episode_0/{key}"]
        file[f"episode_0/{key}"] = flags
    with pytest.raises(DatasetError, match=f"'episode_0/{key}' must hold only 0 and 1"):
        load_minari(root)


def test_hdf5_damaged_inside_its_metadata_is_a_dataset_error(pendulum, tmp_path: Path) -> None:
    # Found by `nox -s fuzz`: one byte inserted into the group's metadata made h5py raise
    # RuntimeError ("addr overflow") from the walk over the file's links.
    data = save_d4rl_hdf5(pendulum, tmp_path / "good.hdf5").read_bytes()
    path = tmp_path / "damaged.hdf5"
    path.write_bytes(data[:115] + b"\0" + data[115:])
    with pytest.raises(DatasetError, match="cannot read .* as HDF5"):
        load_d4rl_hdf5(path)
