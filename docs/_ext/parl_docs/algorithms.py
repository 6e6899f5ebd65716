"""The algorithm list and hyperparameter tables, generated from the registry and the configs.

- ``.. algorithm-list::`` tables every installed algorithm (``parl.algorithms.names()``) with
  its distribution, summary (the docstring's first paragraph) and page, and gives the
  algorithms without a page of their own a section with their hyperparameters;
- ``.. algorithm-config:: NAME`` tables the fields of ``parl.algorithms.get(NAME).Config``:
  name, type, default, bounds and docstring.

A page under ``docs/algorithms/`` declares what it documents in its front matter
(``algorithms: [DQN, DDQN]``); a page whose algorithms are not all installed is left out of
the build, so a family that is not installed simply does not appear.
"""

from __future__ import annotations

import inspect
import types
import typing
from pathlib import Path
from typing import Any

import parl

import yaml
from docutils import nodes
from pydantic.fields import FieldInfo
from sphinx.application import Sphinx
from sphinx.config import Config

from parl_docs.rst import RstDirective, list_table, literal

PAGES = "algorithms"

_BOUNDS = (
    ("gt", ">"),
    ("ge", "≥"),
    ("lt", "<"),
    ("le", "≤"),
    ("multiple_of", "multiple of"),
    ("min_length", "length ≥"),
    ("max_length", "length ≤"),
)


def front_matter(path: Path) -> dict[str, Any]:
    """The YAML front matter of a MyST page (``{}`` when it has none)."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValueError(f"{path}: front matter opened with --- is never closed")
    data = yaml.safe_load(text[4:end]) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: front matter must be a mapping, got {type(data).__name__}")
    return data


def algorithm_pages(srcdir: Path) -> dict[str, list[str]]:
    """Map each page under ``algorithms/`` (docname) to the algorithm names it declares."""
    pages = {}
    for path in sorted((srcdir / PAGES).glob("*.md")):
        declared = front_matter(path).get("algorithms", [])
        if not isinstance(declared, list) or not all(isinstance(n, str) for n in declared):
            raise ValueError(f"{path}: front matter `algorithms` must be a list of names")
        if declared:
            pages[f"{PAGES}/{path.stem}"] = declared
    return pages


def leave_out_uninstalled(app: Sphinx, config: Config) -> None:
    """Exclude algorithm pages that document an algorithm which is not installed."""
    installed = set(parl.algorithms.names())
    for docname, names in algorithm_pages(Path(app.srcdir)).items():
        if not set(names) <= installed:
            config.exclude_patterns.append(f"{docname}.md")


def page_of(srcdir: Path) -> dict[str, str]:
    """Map each installed algorithm name to the docname of the page documenting it."""
    installed = set(parl.algorithms.names())
    return {
        name: docname
        for docname, names in algorithm_pages(srcdir).items()
        if set(names) <= installed
        for name in names
    }


def describe_type(annotation: Any) -> tuple[str, list[str]]:
    """Render a field annotation and collect the bounds of any ``Annotated`` part."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        text, bounds = describe_type(args[0])
        return text, bounds + bounds_of(args[1:])
    if origin is typing.Literal:
        return " | ".join(repr(arg) for arg in args), []
    if origin in (typing.Union, types.UnionType):
        parts = [describe_type(arg) for arg in args]
        return " | ".join(text for text, _ in parts), [b for _, found in parts for b in found]
    if origin is not None:
        inner = ", ".join(describe_type(arg)[0] for arg in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]", []
    if annotation is type(None):
        return "None", []
    return getattr(annotation, "__name__", str(annotation)), []


def bounds_of(metadata: typing.Iterable[Any]) -> list[str]:
    """Human bounds (``> 0``, ``≤ 1``) from annotated-types constraints."""
    found = []
    for item in metadata:
        for attribute, symbol in _BOUNDS:
            value = getattr(item, attribute, None)
            if value is not None:
                found.append(f"{symbol} {value}")
    return found


def field_row(name: str, field: FieldInfo) -> list[str]:
    """One table row: field, type, default, bounds, description (rst inline)."""
    text, bounds = describe_type(field.annotation)
    bounds = bounds_of(field.metadata) + bounds
    computed = field.default_factory is not None
    default = "(computed)" if computed else literal(repr(field.default))
    description = field.description or "**undocumented**"
    return [literal(name), literal(text), default, ", ".join(bounds) or "—", description]


def config_table(name: str) -> list[str]:
    """The rst list-table of the ``Config`` of the algorithm registered as ``name``."""
    config = parl.algorithms.get(name).Config
    rows = [field_row(field, info) for field, info in config.model_fields.items()]
    header = ["field", "type", "default", "bounds", "description"]
    return list_table(header, rows, widths="15 15 10 10 50")


def summary(cls: type) -> str:
    """The first paragraph of a class docstring, on one line (a summary may wrap)."""
    return " ".join((inspect.getdoc(cls) or "").split("\n\n", 1)[0].split())


class AlgorithmConfigDirective(RstDirective):
    """``.. algorithm-config:: NAME``: the hyperparameter table of one algorithm."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        if name not in parl.algorithms.names():
            installed = ", ".join(parl.algorithms.names())
            raise self.error(f"no installed algorithm {name!r}; installed: {installed}")
        return self.parse(config_table(name))


class AlgorithmListDirective(RstDirective):
    """``.. algorithm-list::``: every installed algorithm, and tables for those without a page."""

    def run(self) -> list[nodes.Node]:
        pages = page_of(Path(self.env.srcdir))
        entries = parl.algorithms.entries()
        rows = []
        for name in parl.algorithms.names():
            entry = entries[name][0]
            link = f":doc:`{name} </{pages[name]}>`" if name in pages else f"`{name}`_"
            where = f"{literal(entry.distribution)} {entry.version}"
            rows.append([link, where, summary(parl.algorithms.get(name))])
        lines = list_table(["algorithm", "distribution", "summary"], rows, widths="15 20 65")
        for name in parl.algorithms.names():
            if name not in pages:
                lines += ["", f".. _{name}:", "", f".. rubric:: {name}", ""]
                lines += [summary(parl.algorithms.get(name)), "", *config_table(name)]
        return self.parse(lines)


def setup(app: Sphinx) -> None:
    app.connect("config-inited", leave_out_uninstalled)
    app.add_directive("algorithm-config", AlgorithmConfigDirective)
    app.add_directive("algorithm-list", AlgorithmListDirective)
