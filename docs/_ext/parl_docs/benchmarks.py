"""Benchmark tables and learning curves, generated from committed results files.

``.. benchmark-results:: benchmarks/pg/results-ppo.json`` (path from the repository root;
``:env: CartPole-v1`` to show one environment) renders, per environment, where the figures
came from (command, commit, seeds, machine, config), the learning curves of every seed
(matplotlib) and a table per seed. The file must have the shape of :class:`ResultsFile`:
``{env_id: {command, commit, machine, config, runs: [{seed, env_steps, wall_s, sps,
final_eval_return, steps_to_target, evals: [[env_step, mean_return], ...]}, ...]}}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from docutils import nodes
from docutils.parsers.rst import directives
from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError
from sphinx.application import Sphinx

from parl_docs.rst import RstDirective, list_table, literal

#: Where generated figures go, inside the docs source folder (ignored by git).
GENERATED = Path("_generated") / "benchmarks"


class Run(BaseModel):
    """One seed's figures; further keys are kept but not shown."""

    model_config = ConfigDict(extra="allow")

    seed: int
    env_steps: int
    wall_s: float
    sps: float
    final_eval_return: float
    steps_to_target: int | None = None
    target: float | None = None
    evals: list[tuple[int, float]] = Field(min_length=1)


class Entry(BaseModel):
    """One benchmark (algorithm × environment): its provenance and its runs."""

    model_config = ConfigDict(extra="allow")

    command: str
    commit: str
    machine: str
    config: dict[str, Any]
    runs: list[Run] = Field(min_length=1)


class ResultsFile(RootModel[dict[str, Entry]]):
    """A results file: environment id → :class:`Entry`."""


def load_results(path: Path) -> dict[str, Entry]:
    """Read and validate a results file; errors name the file and the bad field."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read benchmark results {path}: {exc}") from exc
    try:
        return ResultsFile.model_validate(data).root
    except ValidationError as exc:
        raise ValueError(f"{path} is not a benchmark results file:\n{exc}") from exc


def plot_curves(
    title: str, curves: dict[str, list[tuple[int, float]]], out: Path, target: float | None = None
) -> None:
    """Draw each run's evaluation curve, their mean when all runs evaluated at the same steps,
    and the target."""
    figure, axes = plt.subplots(figsize=(6.4, 3.4), dpi=110)
    try:
        for label, evals in curves.items():
            steps, returns = zip(*evals, strict=True)
            axes.plot(steps, returns, linewidth=0.9, alpha=0.55, label=label)
        grids = {tuple(s for s, _ in evals) for evals in curves.values()}
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
        out.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(out, metadata={"Software": None})
    finally:
        plt.close(figure)


def provenance(entry: Entry) -> list[str]:
    """Bullet lines: command, commit, seeds, machine, config."""
    seeds = ", ".join(str(run.seed) for run in entry.runs)
    return [
        f"- command: {literal(entry.command)}",
        f"- commit: {literal(entry.commit)}",
        f"- seeds: {seeds}",
        f"- machine: {entry.machine}",
        f"- config: {literal(json.dumps(entry.config))}",
        "",
    ]


def runs_table(entry: Entry) -> list[str]:
    """A table with one row per seed."""
    header = ["seed", "env steps", "wall s", "env steps/s", "steps to target", "final eval"]
    header.append("best eval")
    rows = [
        [
            str(run.seed),
            str(run.env_steps),
            f"{run.wall_s:.1f}",
            f"{run.sps:.0f}",
            "not reached" if run.steps_to_target is None else str(run.steps_to_target),
            f"{run.final_eval_return:.1f}",
            f"{max(value for _, value in run.evals):.1f}",
        ]
        for run in entry.runs
    ]
    return list_table(header, rows)


class BenchmarkResultsDirective(RstDirective):
    """``.. benchmark-results:: PATH``: provenance, learning curves and a table per env."""

    required_arguments = 1
    option_spec: ClassVar[dict[str, Any]] = {
        "env": directives.unchanged,
        "title": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        srcdir = Path(self.env.srcdir)
        path = srcdir.parent / self.arguments[0]
        self.env.note_dependency(str(path))
        try:
            results = load_results(path)
        except ValueError as exc:
            raise self.error(str(exc)) from exc
        wanted = self.options.get("env")
        if wanted is not None and wanted not in results:
            raise self.error(f"{path.name} has no results for {wanted!r}; it has {sorted(results)}")
        lines: list[str] = []
        for env_id, entry in results.items():
            if wanted in (None, env_id):
                lines += self.section(path, env_id, entry, srcdir)
        return self.parse(lines)

    def section(self, path: Path, env_id: str, entry: Entry, srcdir: Path) -> list[str]:
        title = f"{self.options.get('title', path.stem)} on {env_id}"
        image = GENERATED / f"{path.parent.name}-{path.stem}-{env_id}.png"
        curves = {f"seed {run.seed}": list(run.evals) for run in entry.runs}
        target = entry.runs[0].target
        plot_curves(f"{title}, {len(entry.runs)} seeds", curves, srcdir / image, target)
        figure = [f".. figure:: /{image.as_posix()}", f"   :alt: learning curves of {title}", ""]
        figure += [f"   Evaluation return against environment steps: {title}.", ""]
        return [f".. rubric:: {title}", "", *provenance(entry), *figure, *runs_table(entry), ""]


def setup(app: Sphinx) -> None:
    app.add_directive("benchmark-results", BenchmarkResultsDirective)
