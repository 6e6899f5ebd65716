"""The offline example's dataset cache: CQL, IQL and BC on one built dataset train SAC once, and
a run that loads the kept dataset learns exactly as the run that built it."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from parl.utils.offline import dataset_digest, load_d4rl_hdf5

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE = EXAMPLES / "CQL" / "train.py"
TINY = {
    "behaviour_steps": 1_050,
    "dataset_size": 300,
    "total_steps": 40,
    "hidden_sizes": (32, 32),
    "batch_size": 64,
    "policy_eval_start": 20,
    "eval_every": 20,
    "eval_episodes": 1,
    "quiet": True,
}


def load_example(name: str, path: Path) -> Iterator[ModuleType]:
    """An example's ``train.py`` as a module (registered: its dataclass resolves through it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.fixture
def offline() -> Iterator[ModuleType]:
    """``examples/CQL/train.py``: CQL, IQL, BC and the dataset builder."""
    yield from load_example("offline_example_train", EXAMPLE)


@pytest.fixture
def decision_transformer() -> Iterator[ModuleType]:
    """``examples/DT/train.py``."""
    yield from load_example("dt_example_train", EXAMPLES / "DT" / "train.py")


def test_a_kept_dataset_trains_exactly_as_the_run_that_built_it(offline, tmp_path) -> None:
    cache = tmp_path / "cache"
    built = offline.Args(
        algo="IQL", build="medium", dataset_cache=str(cache), logdir=str(tmp_path / "a"), **TINY
    )
    first = offline.train(built)
    medium, replay = (offline.cached_dataset_path(built, k) for k in ("medium", "medium-replay"))
    assert medium.is_file() and replay.is_file(), "a medium build keeps both datasets"
    assert first.extra["dataset"] == str(tmp_path / "a" / "dataset-medium.hdf5")

    again = offline.train(dataclasses.replace(built, logdir=str(tmp_path / "b")))
    assert again.extra["dataset"] == str(medium)
    assert not (tmp_path / "b" / "dataset-medium.hdf5").exists(), "loaded, not rebuilt"
    assert again.evals == first.evals
    # The result names the data it learnt from: built in memory or loaded from the cache, alike.
    assert first.extra["dataset_digest"] == again.extra["dataset_digest"]
    assert again.extra["dataset_digest"] == dataset_digest(load_d4rl_hdf5(medium))

    # The kept medium-replay is what a medium-replay build of the same settings makes.
    rebuilt = dataclasses.replace(built, build="medium-replay", dataset_cache=None)
    result = offline.train(dataclasses.replace(rebuilt, logdir=str(tmp_path / "c")))
    fresh = load_d4rl_hdf5(tmp_path / "c" / "dataset-medium-replay.hdf5")
    kept = load_d4rl_hdf5(replay)
    assert result.extra["dataset_digest"] == dataset_digest(kept) != first.extra["dataset_digest"]
    assert fresh.keys() == kept.keys()
    for key in fresh:
        np.testing.assert_array_equal(fresh[key], kept[key], err_msg=key)


def test_dt_records_the_dataset_bc_learnt_from(offline, decision_transformer, tmp_path) -> None:
    build = {"build": "medium-replay", "dataset_cache": str(tmp_path / "cache")}
    build |= {key: TINY[key] for key in ("behaviour_steps", "hidden_sizes", "quiet")}
    bc = offline.train(offline.Args(algo="BC", logdir=str(tmp_path / "bc"), total_steps=2, **build))
    dt_args = decision_transformer.Args(
        logdir=str(tmp_path / "dt"),
        total_steps=2,
        context_length=4,
        embed_dim=16,
        num_layers=1,
        batch_size=4,
        eval_every=2,
        eval_episodes=1,
        **build,
    )
    dt = decision_transformer.train(dt_args)
    assert Path(dt.extra["dataset"]).parent == tmp_path / "cache", "DT loads what BC's run kept"
    assert dt.extra["dataset_digest"] == bc.extra["dataset_digest"]
    assert dt.extra["behaviour_return"] == bc.extra["behaviour_return"]


def test_the_cache_key_holds_what_each_kind_of_dataset_depends_on(offline, tmp_path) -> None:
    args = offline.Args(build="medium", dataset_cache=str(tmp_path), **TINY)

    def path(kind: str, **changes) -> Path:
        return offline.cached_dataset_path(dataclasses.replace(args, **changes), kind)

    assert path("medium", behaviour_steps=2_000) != path("medium")
    assert path("medium", dataset_size=600) != path("medium")
    assert path("medium", seed=1) != path("medium")
    assert path("medium", env_id="MountainCarContinuous-v0") != path("medium")
    assert path("medium-replay", dataset_size=600) == path("medium-replay")
    assert path("medium-replay", total_steps=99, algo="CQL") == path("medium-replay")
    assert path("random", behaviour_steps=2_000) == path("random")


def test_a_cache_beside_a_dataset_file_is_refused(offline, tmp_path) -> None:
    args = offline.Args(dataset=str(tmp_path / "d.hdf5"), dataset_cache=str(tmp_path), **TINY)
    with pytest.raises(ValueError, match="drop it when giving --dataset"):
        offline.train(dataclasses.replace(args, logdir=str(tmp_path / "run")))
