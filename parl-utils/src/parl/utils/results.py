"""Benchmark results files: one JSON schema and one plot of learning curves.

A results file maps each environment id to a :class:`Benchmark`: the algorithm, the settings
every seed ran with, and one :class:`BenchmarkRun` per seed (a :class:`~parl.utils.RunResult`
plus the command, commit and machine that produced it). Every writer (``benchmarks/run.py``)
and reader (the docs' tables and figures) goes through :func:`load_results` /
:func:`save_results`, so a file that does not fit is an error naming the file and the field.
:func:`plot_curves` draws every learning-curve figure, in the benchmarks and in the docs.

Examples:
    >>> import pathlib, tempfile
    >>> run = BenchmarkRun(
    ...     env_id="CartPole-v1", seed=0, env_steps=2000, wall_s=1.0, sps=2000.0,
    ...     final_eval_return=500.0, best_eval_return=500.0, best_eval_step=2000,
    ...     target=475.0, first_target_step=2000, evals=[(1000, 120.0), (2000, 500.0)],
    ...     command="python -m benchmarks.run PPO CartPole-v1", commit="abc1234", machine="cpu")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "PPO-CartPole-v1.json"
    >>> save_results({"CartPole-v1": Benchmark(algo="PPO", config={}, runs=[run])}, path)
    >>> load_results(path)["CartPole-v1"].runs[0].first_target_step
    2000
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from parl.core.files import atomic_write
from parl.utils.tracker import RunResult

import pydantic

__all__ = [
    "Benchmark",
    "BenchmarkRun",
    "ResultsFile",
    "load_results",
    "plot_curves",
    "save_results",
]


class BenchmarkRun(RunResult):
    """One seed of a benchmark: the run's figures and where they came from."""

    command: str
    """The command that ran it, from the repository root."""
    commit: str
    """The git commit of the code that trained (``+dirty`` with uncommitted changes)."""
    machine: str
    """CPU, cores, threads, Python and library versions."""


class Benchmark(pydantic.BaseModel):
    """One algorithm on one environment: its settings and one run per seed."""

    model_config = pydantic.ConfigDict(extra="forbid")

    algo: str
    """The algorithm (registry name, or the example's name)."""
    config: dict[str, Any]
    """The settings every run used (the example's settings file)."""
    runs: list[BenchmarkRun] = pydantic.Field(min_length=1)
    """One per seed, sorted by seed."""


class ResultsFile(pydantic.RootModel[dict[str, Benchmark]]):
    """A results file: environment id → :class:`Benchmark`."""


def load_results(path: str | os.PathLike[str]) -> dict[str, Benchmark]:
    """Read and validate a results file.

    Raises:
        ValueError: the file is unreadable or does not fit the schema (the message names the
            file and the field).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read benchmark results {path}: {exc}") from exc
    try:
        return ResultsFile.model_validate_json(text).root
    except pydantic.ValidationError as exc:
        raise ValueError(f"{path} is not a benchmark results file:\n{exc}") from exc


def save_results(results: Mapping[str, Benchmark], path: str | os.PathLike[str]) -> None:
    """Write ``results`` (validated) to ``path`` atomically."""
    data = ResultsFile.model_validate(dict(results))
    with atomic_write(path, mode=0o644) as handle:
        handle.write(data.model_dump_json(indent=1).encode() + b"\n")


def plot_curves(
    title: str,
    curves: Mapping[str, list[tuple[int, float]]],
    out: str | os.PathLike[str],
    target: float | None = None,
) -> None:
    """Draw each run's evaluation curve, their mean when all runs evaluated at the same steps,
    and the target, into the PNG ``out``.

    Args:
        title: the figure's title.
        curves: label (e.g. ``"seed 0"``) → ``(env steps, mean evaluation return)`` pairs.
        out: the PNG to write (folders are created).
        target: a horizontal line at the target return, if given.

    Raises:
        ModuleNotFoundError: matplotlib is not installed (``pip install matplotlib``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "plot_curves needs matplotlib: pip install matplotlib (or parl-utils[plot])"
        ) from exc
    figure, axes = plt.subplots(figsize=(6.4, 3.4), dpi=110)
    try:
        for label, evals in curves.items():
            steps, returns = zip(*evals, strict=True)
            axes.plot(steps, returns, linewidth=0.9, alpha=0.55, label=label)
        grids = {tuple(step for step, _ in evals) for evals in curves.values()}
        if len(curves) > 1 and len(grids) == 1:
            means = [
                sum(value for _, value in column) / len(curves)
                for column in zip(*curves.values(), strict=True)
            ]
            axes.plot(next(iter(grids)), means, color="black", linewidth=1.8, label="mean")
        if target is not None:
            axes.axhline(target, color="grey", linestyle="--", linewidth=1, label="target")
        axes.set(title=title, xlabel="environment steps", ylabel="mean evaluation return")
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small", loc="best")
        figure.tight_layout()
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(out, metadata={"Software": None})
    finally:
        plt.close(figure)
