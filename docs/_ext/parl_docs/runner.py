"""pytest plugin: run every code block of ``docs/`` and every ``>>>`` example of the packages.

``nox -s docs`` runs ``pytest -p parl_docs.runner docs parl-*/src`` with ``docs/_ext`` on
``PYTHONPATH``. Each MyST or rst page, and each package module's docstrings, is one sybil
document whose blocks run in order in one namespace (see :mod:`parl_docs.blocks` for the
markers). A failing block fails the session with its page and line; at the end a summary counts
the blocks that ran and lists every skipped block and page with its reason.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sybil import Document, Example, Sybil
from sybil.document import PythonDocStringDocument
from sybil.example import NotEvaluated
from sybil.sybil import SybilCollection

from parl_docs.blocks import DocTestParser, SkipParser, parsers
from parl_docs.workspace import PageRun

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"

#: Files (from the repository root) whose blocks do not run yet, with the reason; the summary
#: lists them. Remove an entry when its file is fixed.
NOT_RUN_YET: dict[str, str] = {}

#: ``PARL_DOCS_TORCH=1`` (``nox -s torch``) runs the examples of the torch modules (the
#: ``torch/`` folders of the packages); without it (``nox -s docs``, which has no torch) they are
#: left to that session.
TORCH = os.environ.get("PARL_DOCS_TORCH") == "1"


def module_name(path: Path) -> str:
    """The import name of a module file in a ``src/`` layout (``src/parl/utils/x.py``)."""
    parts = path.with_suffix("").parts
    if "src" not in parts:
        raise ValueError(f"{path} is not inside a src/ folder")
    names = parts[len(parts) - parts[::-1].index("src") :]
    return ".".join(names[:-1] if names[-1] == "__init__" else names)


class SrcDocStringDocument(PythonDocStringDocument):
    """Docstrings of a module, evaluated in its namespace; imported by its ``src/`` name.

    Sybil's own import walks up ``__init__.py`` files, which stops too early inside the
    ``parl`` namespace package shared by several distributions.
    """

    def import_document(self, example: Example) -> None:
        module: ModuleType = importlib.import_module(module_name(Path(self.path)))
        self.namespace.update(module.__dict__)
        self.pop_evaluator(self.import_document)
        raise NotEvaluated()


def sybils(root: Path = ROOT) -> SybilCollection:
    """The pages of ``docs/`` and the docstrings of every ``parl-*/src`` tree."""
    page = PageRun(root)
    docs = root / "docs"
    options: dict[str, Any] = {"setup": page.setup, "teardown": page.teardown}
    collection = SybilCollection(
        [
            Sybil(parsers("myst"), patterns=["*.md"], **_where(root, docs), **options),
            Sybil(parsers("rest"), patterns=["*.rst"], **_where(root, docs), **options),
        ]
    )
    for src in sorted(root.glob("parl-*/src")):
        docstrings: list[Any] = [SkipParser("rest"), DocTestParser()]
        types: dict[str | None, type[Document]] = {".py": SrcDocStringDocument}
        where = _where(root, src)
        if not TORCH:
            where["excludes"] += [str(p.relative_to(src)) for p in src.glob("**/torch/*.py")]
        collection.append(
            Sybil(docstrings, patterns=["*.py"], document_types=types, **where, **options)
        )
    return collection


def _where(root: Path, folder: Path) -> dict[str, Any]:
    """Sybil's ``path`` and the ``excludes`` (relative to it) of :data:`NOT_RUN_YET`."""
    inside = [root / name for name in NOT_RUN_YET if (root / name).is_relative_to(folder)]
    return {"path": str(folder), "excludes": [str(p.relative_to(folder)) for p in inside]}


pytest_collect_file = sybils().pytest()


class Summary:
    """Counts the docs' blocks by outcome and keeps the reasons of the skipped ones."""

    def __init__(self) -> None:
        self.outcomes: dict[str, int] = {"passed": 0, "failed": 0, "skipped": 0}
        self.skipped: list[tuple[str, str]] = []

    def record(self, report: pytest.TestReport) -> None:
        # Known by their node id (``page.md::line:N,column:M``), not by collection: under
        # xdist the workers collect, and only their reports reach this process.
        is_block = "::line:" in report.nodeid
        if not is_block or (report.when != "call" and report.passed):
            return
        self.outcomes[report.outcome] += 1
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            self.skipped.append((report.nodeid, str(reason).removeprefix("Skipped: ")))

    def lines(self) -> list[str]:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in self.outcomes.items())
        lines = [f"code blocks of the docs and docstrings: {counts}"]
        lines += [f"  skipped {nodeid}: {reason}" for nodeid, reason in self.skipped]
        lines += [f"  not run {name}: {why}" for name, why in NOT_RUN_YET.items()]
        return lines


_summary = Summary()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _summary.record(report)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.section("docs code blocks")
    for line in _summary.lines():
        terminalreporter.write_line(line)
