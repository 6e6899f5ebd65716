"""The offline example's dataset cache: CQL, IQL and BC on one built dataset train SAC once, and
a run that loads the kept dataset learns exactly as the run that built it."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from parl.utils import make_vector_env
from parl.utils.offline import collect, dataset_digest, load_d4rl_hdf5, save_d4rl_hdf5
from parl.utils.results import Benchmark, BenchmarkRun, save_results

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
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


def random_dataset(offline: ModuleType, seed: int, path: Path) -> Path:
    """200 uniformly random Pendulum-v1 steps (one whole episode) saved as D4RL HDF5."""
    rng = np.random.default_rng(seed)
    envs = make_vector_env(lambda: offline.make_env("Pendulum-v1"), 1)
    policy = lambda obs: rng.uniform(-1, 1, (len(obs), 1)).astype(np.float32)  # noqa: E731
    data = collect(envs, policy, 200, seed=seed)
    envs.close()
    return save_d4rl_hdf5(data, path)


def test_the_offline_table_marks_a_seed_whose_algorithms_learnt_from_other_data(
    offline, tmp_path, monkeypatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    scores = importlib.import_module("benchmarks.offline_scores")
    files = [random_dataset(offline, seed, tmp_path / f"data{seed}.hdf5") for seed in (0, 1)]
    digests = [dataset_digest(load_d4rl_hdf5(path))[:8] for path in files]
    # Seed 0: BC and IQL learn from one file; seed 1: BC from the first, IQL from the second.
    learnt_from = {("BC", 0): 0, ("IQL", 0): 0, ("BC", 1): 0, ("IQL", 1): 1}
    results = tmp_path / "results"
    results.mkdir()
    for algo in ("BC", "IQL"):
        runs = []
        for seed in (0, 1):
            logdir = tmp_path / f"{algo}-{seed}"
            dataset = str(files[learnt_from[algo, seed]])
            tiny = {"total_steps": 2, "eval_every": 2, "eval_episodes": 1, "batch_size": 16}
            args = offline.Args(algo=algo, dataset=dataset, seed=seed, logdir=str(logdir), **tiny)
            offline.train(dataclasses.replace(args, hidden_sizes=(32, 32), quiet=True))
            figures = json.loads((logdir / "result.json").read_text())
            runs.append(BenchmarkRun(**figures, command="-", commit="-", machine="-"))
        benchmark = Benchmark(algo=algo, config={"build": "medium"}, runs=runs)
        save_results({"Pendulum-v1": benchmark}, results / f"{algo}-Pendulum-v1-medium.json")

    runs = scores.read_runs("Pendulum-v1", results)
    lines = scores.report(runs, -1200.0, -150.0).splitlines()
    assert lines[0].startswith("**Not like for like.**")
    assert f"- medium seed 1, differs: IQL: `{digests[1]}`; BC: `{digests[0]}`" in lines
    assert not any(line.startswith("- medium seed 0") for line in lines), "seed 0 agrees"
    cells = [
        [c.strip() for c in line.strip("|").split("|")] for line in lines if "| medium" in line
    ]
    digest_cell = {(row[1], row[2]): row[-1] for row in cells if len(row) == 8}
    assert digest_cell["BC", "0"] == digest_cell["IQL", "0"] == f"`{digests[0]}`"
    assert digest_cell["IQL", "1"] == f"`{digests[1]}` (differs)"
    same_data = {row[1]: row[-1] for row in cells if len(row) == 7}
    assert same_data == {"BC": "differs: seed 1", "IQL": "differs: seed 1"}

    agreeing = scores.report([run for run in runs if run.seed == 0], -1200.0, -150.0)
    assert (
        agreeing.splitlines()[0]
        == "Every algorithm learnt from the same dataset per dataset kind and seed."
    )
    older = [dataclasses.replace(run, digest=None) if run.algo == "IQL" else run for run in runs]
    unverified = f"- medium seed 0, unverified: IQL: not recorded; BC: `{digests[0]}`"
    assert unverified in scores.report(older, -1200.0, -150.0).splitlines()
