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
that every user and CI can build one. Files are treated as hostile: every link and dataset of
an HDF5 file is checked before any array is read (nothing that points at other files, no
plugin filters, declared sizes bounded and backed by stored bytes), nothing is unpickled, and
a bad file is a :class:`~parl.core.errors.DatasetError` naming it.

Datasets never run code. A Minari dataset's environment spec names a Python entry point, and
Minari's own loader imports and calls it (``gym.make``) to rebuild the spaces; :func:`load_minari`
reads the arrays with h5py and never looks at it. :func:`dataset_env_spec` returns the spec as
plain data, and :func:`make_dataset_env` builds the environment only when the user calls it and
its entry points are on an allow-list (gymnasium's own environments by default).

The file formats need ``pip install "parl-utils[offline]"`` (h5py, minari).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from parl.core.errors import DatasetError
from parl.core.files import atomic_write
from parl.utils._hdf5 import checked_datasets
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
    "dataset_digest",
    "dataset_env_spec",
    "episode_returns",
    "load_d4rl_hdf5",
    "load_minari",
    "make_dataset_env",
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
MAX_METADATA_BYTES = 16 * 2**20
"""The bound on a Minari dataset's ``metadata.json`` (spaces, specs and a description: KBs)."""
# What h5py raises for a damaged file, depending on where the damage is.
_HDF5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)
GYMNASIUM_ENTRY_POINTS = ("gymnasium.envs.",)
"""The entry points :func:`make_dataset_env` allows by default: gymnasium's own environments."""

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
        DatasetError: (a ``ValueError``) naming the key that is missing, has the wrong row
            count or shape, or holds something other than finite numbers (for ``terminals``
            and ``timeouts``: other than 0 and 1).
    """
    missing = [key for key in REQUIRED_KEYS if key not in dataset]
    if missing:
        raise DatasetError(
            f"{where} lacks {missing}; a dataset holds {list(REQUIRED_KEYS)} (and optionally "
            "'timeouts'), one row per transition"
        )
    arrays = {key: np.asarray(dataset[key]) for key in DATASET_KEYS if key in dataset}
    for key, array in arrays.items():
        if array.dtype.kind not in "biuf":
            raise DatasetError(f"{where}: {key!r} must hold numbers, got dtype {array.dtype}")
    rows = arrays["observations"].shape[0] if arrays["observations"].ndim else 0
    if rows == 0:
        raise DatasetError(f"{where}: 'observations' must be [N, obs_dim] with N >= 1")
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
            raise DatasetError(
                f"{where}: {key!r} has shape {arrays[key].shape}, expected {shape} (as "
                f"'observations' {obs_shape}: one row per transition)"
            )
    actions = arrays["actions"]
    if actions.ndim not in (1, 2) or actions.shape[0] != rows:
        raise DatasetError(
            f"{where}: 'actions' has shape {actions.shape}, expected [{rows}, act_dim] "
            f"(continuous) or [{rows}] (discrete)"
        )
    discrete = actions.ndim == 1 and actions.dtype.kind in "iu"
    converted = {
        "observations": arrays["observations"].astype(np.float32, copy=False),
        "actions": actions.astype(np.int64 if discrete else np.float32, copy=False),
        "rewards": arrays["rewards"].astype(np.float32, copy=False),
        "next_observations": arrays["next_observations"].astype(np.float32, copy=False),
        "terminals": _flags(arrays["terminals"], "terminals", where),
        "timeouts": _flags(arrays["timeouts"], "timeouts", where),
    }
    for key in ("observations", "actions", "rewards", "next_observations"):
        if not np.isfinite(converted[key]).all():
            raise DatasetError(f"{where}: {key!r} holds NaN or infinite values")
    return converted


def _flags(values: Any, key: str, where: str) -> np.ndarray:
    """``values`` (terminals, timeouts) as booleans, refusing anything but 0 and 1: a NaN or
    a 2 would read as True.

    Raises:
        DatasetError: naming ``where`` and ``key``.
    """
    array = np.asarray(values)
    if array.dtype != bool and (array.dtype.kind not in "iuf" or not np.isin(array, (0, 1)).all()):
        raise DatasetError(f"{where}: {key!r} must hold only 0 and 1 (or booleans)")
    return array.astype(bool, copy=False)


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


def dataset_digest(dataset: Mapping[str, Any]) -> str:
    """The sha256 (hex) of a dataset's contents: its arrays as :func:`check_dataset` returns them,
    in :data:`DATASET_KEYS` order, each with its name, dtype and shape.

    It names the data a run learnt from, so two results can be told to share a dataset or not.
    It hashes the arrays, not a file: an HDF5 file's bytes change with every save (h5py stamps
    times in its object headers) and differ between a built dataset, its saved copy, a D4RL file
    and a Minari directory holding the same transitions; the arrays do not. A dataset without
    ``timeouts`` hashes as one whose timeouts are all False (what :func:`check_dataset` makes).
    """
    data = check_dataset(dataset, "dataset_digest")
    digest = hashlib.sha256()
    for key in DATASET_KEYS:
        array = np.ascontiguousarray(data[key])
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        digest.update(f"{key}:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


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
    timed-out last step and the file's last row. Every link and dataset of the file is checked
    (:mod:`parl.utils._hdf5`), and the bytes it declares bounded, before any array is read;
    on error nothing is returned.

    Args:
        path: the ``.hdf5`` file.
        max_bytes: refuse files whose arrays declare more bytes than this.

    Raises:
        FileNotFoundError: if there is no file (the message says where to get one).
        DatasetError: if the file is truncated, not HDF5, points at other files, declares more
            than it stores or than ``max_bytes``, or its arrays are missing or misshapen.
    """
    import h5py

    path = Path(path)
    if not path.is_file():
        raise _missing(path, "D4RL HDF5 file")
    try:
        with h5py.File(path, "r") as file:
            datasets = checked_datasets(file, str(path), max_bytes)
            present = [key for key in DATASET_KEYS if key in datasets]
            for key in present:
                if datasets[key].dtype.kind not in "biuf":
                    raise DatasetError(f"{path}: {key!r} holds {datasets[key].dtype}, not numbers")
            raw = {key: datasets[key][()] for key in present}
    except DatasetError:
        raise
    except _HDF5_ERRORS as exc:
        raise DatasetError(
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
    timeouts = _flags(raw.get("timeouts", np.zeros(rows, dtype=bool)), "timeouts", str(path))
    if timeouts.shape != (rows,):
        raise DatasetError(f"{path}: 'timeouts' has shape {timeouts.shape}, expected ({rows},)")
    for key, value in raw.items():
        if value.ndim == 0 or len(value) != rows:
            raise DatasetError(f"{path}: {key!r} has shape {value.shape}, expected {rows} rows")
    keep = np.flatnonzero(~timeouts[:-1])
    derived = {key: value[keep] for key, value in raw.items()}
    derived["next_observations"] = obs[keep + 1]
    derived["timeouts"] = np.zeros(len(keep), dtype=bool)
    return derived


def _minari_data(path: Path) -> Path:
    data = path / "data" if (path / "data").is_dir() else path
    if not (data / "metadata.json").is_file():
        raise _missing(data, "Minari dataset (data/metadata.json)")
    return data


def _minari_metadata(data: Path) -> dict[str, Any]:
    """``metadata.json`` as plain JSON data, read without blocking and bounded in size."""
    where = data / "metadata.json"
    try:
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_METADATA_BYTES:
                raise DatasetError(
                    f"{where} is not a regular file of at most {MAX_METADATA_BYTES} bytes"
                )
            metadata = json.loads(handle.read(MAX_METADATA_BYTES + 1))
    except (OSError, ValueError, RecursionError) as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"cannot read {where} as JSON: {exc}") from exc
    if not isinstance(metadata, dict):
        raise DatasetError(f"{where} is not a JSON object")
    return metadata


def load_minari(
    path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES
) -> dict[str, np.ndarray]:
    """Read a Minari dataset already on disk (its HDF5 format) into a dataset dict.

    The arrays are read with h5py after the file is checked as :func:`load_d4rl_hdf5` checks
    one; the metadata's spaces and environment spec are not used (Minari's loader imports the
    spec's entry point to rebuild missing spaces: a dataset could run code). See
    :func:`dataset_env_spec` for the environment.

    Args:
        path: the dataset's directory (``~/.minari/datasets/<dataset_id>``, the one holding
            ``data/``), or its ``data`` folder.
        max_bytes: refuse datasets whose arrays declare more bytes than this.

    Raises:
        FileNotFoundError: if the dataset is not there (the message says how to get it).
        DatasetError: if the metadata or the data file is unreadable or unsafe, the data is in
            another format than HDF5, or its observations or actions are not flat arrays.
    """
    import h5py

    data = _minari_data(Path(path))
    metadata = _minari_metadata(data)
    if metadata.get("data_format", "hdf5") != "hdf5":
        raise DatasetError(
            f"{data} holds its data as {metadata.get('data_format')!r}; PARL reads Minari's "
            "'hdf5' format (create the dataset with data_format='hdf5')"
        )
    episodes = metadata.get("total_episodes")
    if type(episodes) is not int or episodes < 1:
        raise DatasetError(f"{data}/metadata.json: total_episodes is {episodes!r}, not a count")
    main = data / "main_data.hdf5"
    if not main.is_file():
        raise _missing(main, "Minari data file")
    recorder = DatasetRecorder()
    try:
        with h5py.File(main, "r") as file:
            datasets = checked_datasets(file, str(main), max_bytes)
            for index in range(episodes):
                _record_minari_episode(recorder, datasets, f"episode_{index}", main)
    except DatasetError:
        raise
    except _HDF5_ERRORS as exc:
        raise DatasetError(f"cannot read {main} as HDF5 (truncated or not HDF5: {exc})") from exc
    return check_dataset(recorder.to_dict(), str(data))


def _record_minari_episode(
    recorder: DatasetRecorder, datasets: Mapping[str, Any], episode: str, main: Path
) -> None:
    keys = ("observations", "actions", "rewards", "terminations", "truncations")
    arrays = {}
    for key in keys:
        dataset = datasets.get(f"{episode}/{key}")
        if dataset is None or dataset.dtype.kind not in "biuf":
            raise DatasetError(
                f"{main}: {episode}/{key} is missing or not an array of numbers; only flat Box "
                "observations and Box or Discrete actions are supported"
            )
        arrays[key] = dataset[()]
    observations = arrays["observations"]
    if observations.ndim != 2 or len(observations) != len(arrays["rewards"]) + 1:
        raise DatasetError(
            f"{main}: {episode} has observations of shape {observations.shape} for "
            f"{len(arrays['rewards'])} steps; a Minari episode holds steps + 1 flat observations"
        )
    recorder.add_batch(
        observations[:-1],
        arrays["actions"],
        arrays["rewards"],
        observations[1:],
        _flags(arrays["terminations"], f"{episode}/terminations", str(main)),
        _flags(arrays["truncations"], f"{episode}/truncations", str(main)),
    )


def dataset_env_spec(
    path: str | os.PathLike[str], *, eval_env: bool = False
) -> dict[str, Any] | None:
    """The environment spec a Minari dataset names, as plain data (nothing is imported).

    Args:
        path: the dataset's directory or its ``data`` folder.
        eval_env: the evaluation environment's spec instead of the collecting one's.

    Returns:
        The spec (``id``, ``entry_point``, ``kwargs``, ...) as a dict, or None if the dataset
        names none. Build it with :func:`make_dataset_env`.

    Raises:
        DatasetError: the metadata or the spec is not readable JSON.
    """
    data = _minari_data(Path(path))
    text = _minari_metadata(data).get("eval_env_spec" if eval_env else "env_spec")
    if text is None:
        return None
    try:
        spec = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError) as exc:
        raise DatasetError(f"{data}/metadata.json: the environment spec is not JSON") from exc
    if not isinstance(spec, dict) or not isinstance(spec.get("entry_point"), str):
        raise DatasetError(f"{data}/metadata.json: the environment spec names no entry point")
    return spec


def make_dataset_env(
    spec: Mapping[str, Any],
    *,
    allowed_entry_points: Sequence[str] = GYMNASIUM_ENTRY_POINTS,
    **kwargs: Any,
) -> gym.Env:
    """Build the environment of a :func:`dataset_env_spec`, if its code is allowed.

    The spec names Python code to import and call (its entry point and those of its
    wrappers); a spec from a downloaded dataset is as untrusted as the dataset. Each entry
    point's module must be on the allow-list: a prefix ending in ``.`` allows a package and
    everything under it (``"gymnasium.envs."``), any other entry is a whole ``module:name``.

    Args:
        spec: the spec dict.
        allowed_entry_points: what may be imported; gymnasium's own environments by default.
        kwargs: passed to ``gym.make``.

    Raises:
        DatasetError: an entry point is not allowed (the message says how to allow it), or
            the spec is not one gymnasium can read.
    """
    from gymnasium.envs.registration import EnvSpec

    wrappers = spec.get("additional_wrappers") or []
    if not isinstance(wrappers, list) or not all(isinstance(w, dict) for w in wrappers):
        raise DatasetError("the environment spec's additional_wrappers is not a list of specs")
    for entry in [spec.get("entry_point"), *(w.get("entry_point") for w in wrappers)]:
        if not _allowed(entry, allowed_entry_points):
            raise DatasetError(
                f"the environment spec's entry point {entry!r} is not on the allow-list "
                f"{list(allowed_entry_points)}; importing it would run its code. If you trust "
                "the dataset, pass allowed_entry_points including it"
            )
    try:
        env_spec = EnvSpec.from_json(json.dumps({"additional_wrappers": [], **spec}))
    except (ValueError, TypeError) as exc:
        raise DatasetError(f"the environment spec is not one gymnasium reads: {exc}") from exc
    return gym.make(env_spec, **kwargs)


def _allowed(entry: Any, allowed: Sequence[str]) -> bool:
    if not isinstance(entry, str) or entry.count(":") != 1:
        return False
    module = entry.split(":")[0]
    return any(
        module.startswith(prefix) if prefix.endswith(".") else entry == prefix for prefix in allowed
    )
