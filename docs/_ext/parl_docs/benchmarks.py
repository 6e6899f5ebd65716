"""Benchmark tables and learning curves, generated from committed results files.

``.. benchmark-results:: benchmarks/pg/results-ppo.json`` (path from the repository root;
``:env: CartPole-v1`` to show one environment) renders, per environment, where the figures
came from (commands, commits, seeds, machine, config), the learning curves of every seed and a
table per seed. The file has the one results schema, :class:`parl.utils.results.ResultsFile`,
and the curves come from :func:`parl.utils.results.plot_curves`, as the benchmarks' own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from parl.utils.results import Benchmark, load_results, plot_curves

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx

from parl_docs.rst import RstDirective, list_table, literal

#: Where generated figures go, inside the docs source folder (ignored by git).
GENERATED = Path("_generated") / "benchmarks"


def provenance(entry: Benchmark) -> list[str]:
    """Bullet lines: commands, commits, seeds, machines, config (each distinct value once)."""

    def distinct(values: list[str]) -> list[str]:
        return list(dict.fromkeys(values))

    seeds = ", ".join(str(run.seed) for run in entry.runs)
    commands = ", ".join(literal(c) for c in distinct([run.command for run in entry.runs]))
    commits = ", ".join(literal(c) for c in distinct([run.commit for run in entry.runs]))
    return [
        f"- command: {commands}",
        f"- commit: {commits}",
        f"- seeds: {seeds}",
        f"- machine: {'; '.join(distinct([run.machine for run in entry.runs]))}",
        f"- config: {literal(json.dumps(entry.config))}",
        "",
    ]


def runs_table(entry: Benchmark) -> list[str]:
    """A table with one row per seed."""
    header = ["seed", "env steps", "wall s", "env steps/s", "steps to target", "final eval"]
    header.append("best eval")
    rows = [
        [
            str(run.seed),
            str(run.env_steps),
            f"{run.wall_s:.1f}",
            f"{run.sps:.0f}",
            "not reached" if run.first_target_step is None else str(run.first_target_step),
            "n/a" if run.final_eval_return is None else f"{run.final_eval_return:.1f}",
            "n/a" if run.best_eval_return is None else f"{run.best_eval_return:.1f}",
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

    def section(self, path: Path, env_id: str, entry: Benchmark, srcdir: Path) -> list[str]:
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
