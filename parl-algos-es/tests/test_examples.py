"""The ES examples: EvoKit's offline workflow round-trips through its files, and train.py runs.

The offline stages run in-process here (each stage loads everything it needs from the work
directory, so a fresh agent per stage is a fresh process as far as the state goes); one test
runs the three stages as separate processes from the command line, as the example's README
does.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from parl.core.errors import CheckpointError
from parl.utils import evaluate, make_vector_env

import numpy as np
import pytest

from parl_algos_es.harness import episode_seed

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ES"


@pytest.fixture
def offline(monkeypatch) -> ModuleType:
    """``examples/ES/evokit_offline.py`` as a module (it imports its sibling ``train``)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    for name in ("evokit_offline", "train"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    module = importlib.import_module("evokit_offline")
    yield module
    for name in ("evokit_offline", "train"):
        sys.modules.pop(name, None)


def stage_args(offline: ModuleType, workdir: Path, algo: str, stage: str, **extra):
    options = {
        "ES": {"noise_table_size": 10_000},
        "CMAES": {"noise_stdev": 0.5},
        "GA": {"parents": 2},
    }[algo]
    return offline.Args(
        stage=stage,
        workdir=str(workdir),
        algo=algo,
        population_size=6,
        eval_episodes=0,
        **options,
        **extra,
    )


@pytest.mark.parametrize("algo", ["ES", "CMAES", "GA"])
def test_offline_update_uses_exactly_the_logged_rewards(offline, tmp_path, algo) -> None:
    for stage in ("init", "sample", "update"):
        offline.main(stage_args(offline, tmp_path, algo, stage))
    args = stage_args(offline, tmp_path, algo, "update")
    assert offline.latest_generation(tmp_path) == 1
    records, rewards, moments = offline.read_logs(tmp_path, 0)
    assert len(records) == 6 and moments == []

    # The logged reward is the candidate's: replay the first one from generation 0's files.
    replay = offline.make_agent(args)
    offline.load(replay, tmp_path, 0)
    assert replay.alg.ask() == records  # the update stage draws the sampler's candidates
    replay.perturb(records[0])
    envs = make_vector_env(args.env_id, 1)
    seed = episode_seed(args.seed, 0, records[0])
    assert evaluate(envs, replay.predict, 1, seed=seed).mean_return == rewards[0]

    # Generation 1 is generation 0 updated with the logged rewards, and nothing else.
    expected = offline.make_agent(args)
    offline.load(expected, tmp_path, 0)
    expected.alg.ask()
    expected.update(records, rewards)
    published = offline.make_agent(args)
    offline.load(published, tmp_path, 1)
    np.testing.assert_array_equal(published.alg.flat.get(), expected.alg.flat.get())
    assert not np.array_equal(published.alg.flat.get(), replay.alg.flat.get())


def test_offline_update_refuses_logs_of_other_candidates(offline, tmp_path) -> None:
    for stage in ("init", "sample"):
        offline.main(stage_args(offline, tmp_path, "ES", stage))
    log = next((tmp_path / "samples").glob("0000-*.jsonl"))
    lines = log.read_text().splitlines()
    entry = json.loads(lines[0])
    entry["record"]["key"] += 1
    log.write_text("\n".join([json.dumps(entry), *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match="not the 6 this generation draws"):
        offline.main(stage_args(offline, tmp_path, "ES", "update"))
    log.write_text('{"record": {"key": 1}, "reward": 1.0}\n')
    with pytest.raises(ValueError, match=r"0000-sampler0.jsonl:1: expected a line"):
        offline.main(stage_args(offline, tmp_path, "ES", "update"))
    assert offline.latest_generation(tmp_path) == 0


def test_offline_workflow_carries_observation_statistics(offline, tmp_path) -> None:
    def args(stage, normalize=True):
        return stage_args(offline, tmp_path, "ES", stage, normalize_observations=normalize)

    for stage in ("init", "sample", "update"):
        offline.main(args(stage))
    records, _, moments = offline.read_logs(tmp_path, 0)
    assert len(moments) == 1 and moments[0].count > 0

    # The sampler's statistics are those of the observations of the logged candidates' episodes.
    replay = offline.make_agent(args("update"))
    offline.load(replay, tmp_path, 0)
    assert replay.obs_count == 0
    envs = make_vector_env("CartPole-v1", 1)
    for record in records:
        replay.perturb(record)
        evaluate(envs, replay.predict, 1, seed=episode_seed(0, 0, record))
    seen = replay.take_observation_moments()
    assert seen.count == moments[0].count
    np.testing.assert_allclose(seen.mean, moments[0].mean, rtol=1e-12)

    # Generation 1 holds them (from its solver file), the next sampler normalises with them.
    published = offline.make_agent(args("update"))
    offline.load(published, tmp_path, 1)
    assert published.obs_count == seen.count
    np.testing.assert_allclose(published.obs_var, seen.var, rtol=1e-12)
    offline.main(args("sample"))
    assert offline.read_logs(tmp_path, 1)[2][0].count > 0

    with pytest.raises(CheckpointError, match="does not normalise observations"):
        offline.main(args("update", normalize=False))
    assert offline.latest_generation(tmp_path) == 1


def test_offline_update_refuses_mixed_normalisation_settings(offline, tmp_path) -> None:
    offline.main(stage_args(offline, tmp_path, "ES", "init", normalize_observations=True))
    offline.main(stage_args(offline, tmp_path, "ES", "sample", normalize_observations=True))
    log = next((tmp_path / "samples").glob("0000-*.jsonl"))
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))  # no summary
    with pytest.raises(ValueError, match="hold 0 observation summaries, but this update does"):
        offline.main(stage_args(offline, tmp_path, "ES", "update", normalize_observations=True))
    assert offline.latest_generation(tmp_path) == 0


def test_offline_stages_run_as_separate_processes(tmp_path) -> None:
    script = str(EXAMPLES / "evokit_offline.py")
    init = [sys.executable, script, "--stage", "init", "--workdir", str(tmp_path)]
    init += ["--population-size", "4", "--eval-episodes", "1"]
    config = ["--config", str(tmp_path / "config.yaml")]
    for command in (
        init,
        [sys.executable, script, *config, "--stage", "sample"],
        [sys.executable, script, *config, "--stage", "update"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stderr[-2_000:]
    assert "generation 1 published: grad_norm" in done.stdout
    assert json.loads((tmp_path / "latest.json").read_text()) == {"generation": 1}
    assert len((tmp_path / "samples" / "0000-sampler0.jsonl").read_text().splitlines()) == 4


@pytest.mark.torch
def test_train_runs_on_a_torch_policy_with_remote_actors(tmp_path) -> None:
    """The example with ``--backend torch``: a torch policy, evaluated by two actors of an
    embedded cluster that build the same torch policy, and a final evaluation."""
    pytest.importorskip("torch")
    command = [sys.executable, str(EXAMPLES / "train.py"), "--backend", "torch"]
    command += ["--generations", "2", "--population-size", "8", "--noise-table-size", "100000"]
    command += ["--num-actors", "2", "--eval-episodes", "2", "--logdir", str(tmp_path), "--quiet"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    config = (tmp_path / "config.yaml").read_text()
    assert "backend: torch" in config
