"""Offline RL datasets: build them from any policy, save and load D4RL's HDF5 layout, read Minari.

A dataset is a dict of numpy arrays in D4RL's layout, one row per transition::

    observations       [N, obs_dim]  float32
    actions            [N, act_dim]  float32 (or [N] int64 for discrete actions)
    rewards            [N]           float32
    next_observations  [N, obs_dim]  float32
    terminals          [N]           bool    the episode terminated: no bootstrap
    timeouts           [N]           bool    the episode was cut by a time limit

:meth:`parl.utils.ReplayMemory.load_from_d4rl` fills a replay memory from it (PARL 2.x's CQL
example does so). Nothing here downloads: the loaders take a path that is already on disk, and
:func:`collect` makes a dataset from any policy (random, a partly trained agent, an expert) so
that every user and CI can build one. Files are treated as hostile: shapes, dtypes and sizes are
checked before anything is read whole, and nothing is unpickled.

The file formats need ``pip install "parl-utils[offline]"`` (h5py, minari).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from parl.core.files import atomic_write
from parl.utils._validation import positive_int
from parl.utils.rollout import RolloutCollector, Transition

import gymnasium as gym
import numpy as np

__all__ = [
    "DATASET_KEYS",
    "DatasetRecorder",
    "check_dataset",
    "collect",
    "concatenate",
    "episode_returns",
    "load_d4rl_hdf5",
    "load_minari",
    "save_d4rl_hdf5",
]

DATASET_KEYS = (
    "observations",
    "actions",
    "rewards",
    "next_observations",
    "terminals",
    "timeouts",
)
"""The arrays of a dataset, in D4RL's names."""

# Keys a dataset must have; ``timeouts`` is optional (PARL 2.x's dicts have none).
REQUIRED_KEYS = DATASET_KEYS[:5]
MAX_BYTES = 8 * 2**30
"""The default bound on the bytes a loader reads (a million 17-dim MuJoCo steps are ~0.2 GB)."""

_WHERE_TO_GET = (
    "D4RL's HDF5 files come from the d4rl package's dataset URLs; Minari datasets from "
    "`minari download <dataset_id>` (they land in ~/.minari/datasets/<dataset_id>). Or build "
    "one offline with parl.utils.offline.collect (examples/CQL/train.py --build medium)."
)


def _missing(path: Path, what: str) -> FileNotFoundError:
    return FileNotFoundError(f"no {what} at {path}. {_WHERE_TO_GET}")


def check_dataset(dataset: Mapping[str, Any], where: str = "dataset") -> dict[str, np.ndarray]:
    """Check a D4RL-layout dict and return it as numpy arrays of the standard dtypes.

    Args:
        dataset: a mapping with at least observations, actions, rewards, next_observations
            and terminals (``timeouts`` defaults to all False).
        where: names the source in error messages (a file path, a function).

    Raises:
        ValueError: naming the key that is missing, has the wrong row count or shape, or holds
            something other than finite numbers.
    """
    missing = [key for key in REQUIRED_KEYS if key not in dataset]
    if missing:
        raise ValueError(
            f"{where} lacks {missing}; a dataset holds {list(REQUIRED_KEYS)} (and optionally "
            "'timeouts'), one row per transition"
        )
    arrays = {key: np.asarray(dataset[key]) for key in DATASET_KEYS if key in dataset}
    for key, array in arrays.items():
        if array.dtype.kind not in "biuf":
            raise ValueError(f"{where}: {key!r} must hold numbers, got dtype {array.dtype}")
    rows = arrays["observations"].shape[0] if arrays["observations"].ndim else 0
    if rows == 0:
        raise ValueError(f"{where}: 'observations' must be [N, obs_dim] with N >= 1")
    arrays.setdefault("timeouts", np.zeros(rows, dtype=bool))
    obs_shape = arrays["observations"].shape
    expected = {
        "next_observations": obs_shape,
        "rewards": (rows,),
        "terminals": (rows,),
        "timeouts": (rows,),
    }
    for key, shape in expected.items():
        if arrays[key].shape != shape:
            raise ValueError(
                f"{where}: {key!r} has shape {arrays[key].shape}, expected {shape} (as "
                f"'observations' {obs_shape}: one row per transition)"
            )
    actions = arrays["actions"]
    if actions.ndim not in (1, 2) or actions.shape[0] != rows:
        raise ValueError(
            f"{where}: 'actions' has shape {actions.shape}, expected [{rows}, act_dim] "
            f"(continuous) or [{rows}] (discrete)"
        )
    discrete = actions.ndim == 1 and actions.dtype.kind in "iu"
    converted = {
        "observations": arrays["observations"].astype(np.float32, copy=False),
        "actions": actions.astype(np.int64 if discrete else np.float32, copy=False),
        "rewards": arrays["rewards"].astype(np.float32, copy=False),
        "next_observations": arrays["next_observations"].astype(np.float32, copy=False),
        "terminals": arrays["terminals"].astype(bool, copy=False),
        "timeouts": arrays["timeouts"].astype(bool, copy=False),
    }
    for key in ("observations", "actions", "rewards", "next_observations"):
        if not np.isfinite(converted[key]).all():
            raise ValueError(f"{where}: {key!r} holds NaN or infinite values")
    return converted


class DatasetRecorder:
    """Accumulates transitions into a dataset (D4RL's layout), from any loop.

    Feed it the :class:`~parl.utils.rollout.Transition` s of a
    :class:`~parl.utils.RolloutCollector` (:meth:`add`), e.g. inside an agent's training loop to
    keep its whole replay stream ("medium-replay"), then call :meth:`to_dict`.

    Examples:
        >>> from parl.utils import make_vector_env
        >>> recorder = DatasetRecorder()
        >>> collector = RolloutCollector(make_vector_env("Pendulum-v1", 1), seed=0)
        >>> recorder.add(collector.step(np.zeros((1, 1), np.float32)))
        >>> len(recorder), sorted(recorder.to_dict())[0]
        (1, 'actions')
    """

    def __init__(self) -> None:
        self._chunks: dict[str, list[np.ndarray]] = {key: [] for key in DATASET_KEYS}
        self._rows = 0

    def __len__(self) -> int:
        return self._rows

    def add(self, step: Transition) -> None:
        """Record one vector step (``N`` transitions): a truncation is a timeout, not a terminal."""
        self.add_batch(
            step.obs, step.actions, step.rewards, step.next_obs, step.terminations, step.truncations
        )

    def add_batch(
        self,
        observations: Any,
        actions: Any,
        rewards: Any,
        next_observations: Any,
        terminated: Any,
        truncated: Any,
    ) -> None:
        """Record ``N`` transitions given as arrays with a leading axis ``N``."""
        terminated = np.asarray(terminated, dtype=bool)
        values = (
            observations,
            actions,
            rewards,
            next_observations,
            terminated,
            np.asarray(truncated, dtype=bool) & ~terminated,
        )
        for key, value in zip(DATASET_KEYS, values, strict=True):
            self._chunks[key].append(np.array(value, copy=True))
        self._rows += len(terminated)

    def to_dict(self) -> dict[str, np.ndarray]:
        """The recorded transitions, checked, as a dataset dict."""
        if not self._rows:
            raise ValueError("the DatasetRecorder is empty; add transitions first")
        joined = {key: np.concatenate(chunks) for key, chunks in self._chunks.items()}
        return check_dataset(joined, "DatasetRecorder")


def collect(
    envs: gym.vector.VectorEnv,
    policy: Callable[[np.ndarray], Any],
    num_steps: int,
    *,
    seed: int | None = None,
) -> dict[str, np.ndarray]:
    """Run ``policy`` in ``envs`` for ``num_steps`` transitions and return them as a dataset.

    Args:
        envs: a vector env with same-step autoreset (:func:`parl.utils.make_vector_env`); wrap
            it so that its actions are the ones to store (e.g. ``ActionMappingWrapper`` inside,
            the policy acting in ``[-1, 1]``).
        policy: observations ``[N, obs_dim]`` → actions ``[N, ...]`` (a random policy, an
            agent's ``sample`` or ``predict``).
        num_steps: transitions to record (rounded up to a whole vector step).
        seed: passed to the first reset.

    Returns:
        The dataset dict; mix policies with :func:`concatenate`.
    """
    num_steps = positive_int("num_steps", num_steps)
    collector = RolloutCollector(envs, seed=seed)
    recorder = DatasetRecorder()
    while collector.env_steps < num_steps:
        recorder.add(collector.step(policy(collector.obs)))
    return recorder.to_dict()


def concatenate(datasets: Iterable[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Join datasets (e.g. a random and a medium one) into one, checking each."""
    checked = [check_dataset(d, f"dataset {i}") for i, d in enumerate(datasets)]
    if not checked:
        raise ValueError("concatenate needs at least one dataset")
    return {key: np.concatenate([d[key] for d in checked]) for key in DATASET_KEYS}


def episode_returns(dataset: Mapping[str, Any]) -> np.ndarray:
    """The undiscounted returns of the dataset's complete episodes (they end in a terminal or a
    timeout); the behaviour policy's score. A trailing unfinished episode is left out."""
    data = check_dataset(dataset)
    ends = np.flatnonzero(data["terminals"] | data["timeouts"])
    totals = np.cumsum(data["rewards"], dtype=np.float64)[ends]
    return np.diff(totals, prepend=0.0)


def save_d4rl_hdf5(dataset: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a dataset as a D4RL-layout HDF5 file, atomically (a crash keeps any old file).

    Returns:
        The path written.
    """
    import h5py

    data = check_dataset(dataset, "save_d4rl_hdf5")
    path = Path(path)
    with atomic_write(path) as handle, h5py.File(handle, "w") as file:
        for key, array in data.items():
            file.create_dataset(key, data=array)
    return path


def load_d4rl_hdf5(path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """Read a D4RL-layout HDF5 file (D4RL's own downloads, or :func:`save_d4rl_hdf5`'s).

    A file without ``next_observations`` (D4RL's raw files) gets them as
    ``d4rl.qlearning_dataset`` does: the next row's observation, dropping each episode's
    timed-out last step and the file's last row. Every array's shape and dtype is checked, and
    their total size bounded, before any is read; on error nothing is returned.

    Args:
        path: the ``.hdf5`` file.
        max_bytes: refuse files whose arrays hold more bytes than this.

    Raises:
        FileNotFoundError: if there is no file (the message says where to get one).
        ValueError: if the file is truncated, not HDF5, or its arrays are missing or misshapen.
    """
    import h5py

    path = Path(path)
    if not path.is_file():
        raise _missing(path, "D4RL HDF5 file")
    keys = list(DATASET_KEYS)
    try:
        with h5py.File(path, "r") as file:
            linked = [k for k in keys if isinstance(file.get(k, getlink=True), h5py.ExternalLink)]
            if linked:
                raise ValueError(
                    f"{path}: {linked} link to other files; a dataset file must hold its arrays"
                )
            present = [k for k in keys if isinstance(file.get(k), h5py.Dataset)]
            size = sum(file[k].size * file[k].dtype.itemsize for k in present)
            if size > max_bytes:
                raise ValueError(
                    f"{path} holds {size} bytes of arrays, over max_bytes={max_bytes}; pass a "
                    "larger max_bytes if you trust the file and have the memory"
                )
            for key in present:
                if file[key].dtype.kind not in "biuf":
                    raise ValueError(f"{path}: {key!r} holds {file[key].dtype}, not numbers")
            raw = {key: file[key][()] for key in present}
    except OSError as exc:
        raise ValueError(
            f"cannot read {path} as HDF5 (truncated or not an HDF5 file: {exc}); build or "
            f"download it again. {_WHERE_TO_GET}"
        ) from exc
    if "next_observations" not in raw and "observations" in raw:
        raw = _qlearning_rows(raw, path)
    return check_dataset(raw, str(path))


def _qlearning_rows(raw: dict[str, np.ndarray], path: Path) -> dict[str, np.ndarray]:
    """Derive ``next_observations`` from consecutive rows, as ``d4rl.qlearning_dataset``."""
    obs = raw["observations"]
    rows = len(obs)
    timeouts = np.asarray(raw.get("timeouts", np.zeros(rows, dtype=bool)), dtype=bool)
    if timeouts.shape != (rows,):
        raise ValueError(f"{path}: 'timeouts' has shape {timeouts.shape}, expected ({rows},)")
    for key, value in raw.items():
        if value.ndim == 0 or len(value) != rows:
            raise ValueError(f"{path}: {key!r} has shape {value.shape}, expected {rows} rows")
    keep = np.flatnonzero(~timeouts[:-1])
    derived = {key: value[keep] for key, value in raw.items()}
    derived["next_observations"] = obs[keep + 1]
    derived["timeouts"] = np.zeros(len(keep), dtype=bool)
    return derived


def load_minari(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a Minari dataset already on disk into a dataset dict.

    Args:
        path: the dataset's directory (``~/.minari/datasets/<dataset_id>``, the one holding
            ``data/``), or its ``data`` folder.

    Raises:
        FileNotFoundError: if the dataset is not there (the message says how to get it).
        ValueError: if its observations or actions are not flat arrays.
    """
    import minari

    path = Path(path)
    data = path / "data" if (path / "data").is_dir() else path
    if not (data / "metadata.json").is_file():
        raise _missing(data, "Minari dataset (data/metadata.json)")
    recorder = DatasetRecorder()
    for episode in minari.MinariDataset(data).iterate_episodes():
        observations = episode.observations
        if not isinstance(observations, np.ndarray) or observations.ndim != 2:
            raise ValueError(
                f"{path}: episode {episode.id} has observations of type "
                f"{type(observations).__name__}; only flat Box observations are supported"
            )
        recorder.add_batch(
            observations[:-1],
            episode.actions,
            episode.rewards,
            observations[1:],
            episode.terminations,
            episode.truncations,
        )
    return recorder.to_dict()
