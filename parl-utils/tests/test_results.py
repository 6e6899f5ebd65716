"""The benchmark results schema and the learning-curve plot, on files written to disk."""

from __future__ import annotations

import json
from pathlib import Path

from parl.utils.results import Benchmark, BenchmarkRun, load_results, plot_curves, save_results

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(seed: int, **changes) -> BenchmarkRun:
    figures = dict(
        env_id="Toy-v0", seed=seed, env_steps=200, wall_s=2.0, sps=100.0,
        final_eval_return=9.0, best_eval_return=9.0, best_eval_step=200, target=8.0,
        first_target_step=200, evals=[(100, 5.0), (200, 9.0)],
        command="python examples/X/train.py --seed 0", commit="abc", machine="a VM",
    )  # fmt: skip
    return BenchmarkRun(**figures | changes)


def test_a_results_file_round_trips(tmp_path):
    results = {"Toy-v0": Benchmark(algo="X", config={"lr": 0.1}, runs=[_run(0), _run(1)])}
    save_results(results, tmp_path / "r.json")
    assert load_results(tmp_path / "r.json") == results


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda run: run.pop("machine"), "machine"),
        (lambda run: run.update(steps_to_target=1), "steps_to_target"),
        (lambda run: run.update(evals=[[1, "high"]]), "evals"),
    ],
)
def test_a_file_that_does_not_fit_names_the_file_and_field(tmp_path, change, match):
    run = json.loads(_run(0).model_dump_json())
    change(run)
    (tmp_path / "bad.json").write_text(
        json.dumps({"Toy-v0": {"algo": "X", "config": {}, "runs": [run]}})
    )
    with pytest.raises(
        ValueError, match=rf"bad.json is not a benchmark results file(.|\n)*{match}"
    ):
        load_results(tmp_path / "bad.json")


def test_every_committed_learning_results_file_fits_the_schema():
    paths = [
        *ROOT.glob("benchmarks/pg/results-*.json"),
        *ROOT.glob("benchmarks/impala/results-*.json"),
        *ROOT.glob("benchmarks/ac/results/*.json"),
        *ROOT.glob("benchmarks/results/*.json"),
    ]
    assert len(paths) >= 9
    for path in paths:
        for env_id, benchmark in load_results(path).items():
            assert all(run.env_id == env_id and run.evals for run in benchmark.runs), path


def test_plot_curves_writes_a_png(tmp_path):
    out = tmp_path / "figs" / "curves.png"
    plot_curves("Toy", {"seed 0": [(1, 1.0), (2, 3.0)], "seed 1": [(1, 2.0), (2, 2.0)]}, out, 2.5)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
