"""Small helpers for directives that generate reStructuredText and parse it in place."""

from __future__ import annotations

from collections.abc import Sequence

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


def list_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], widths: str = "auto"
) -> list[str]:
    """Lines of an rst ``list-table`` whose cells are rst inline text."""
    lines = [".. list-table::", "   :header-rows: 1", f"   :widths: {widths}", ""]
    for row in [header, *rows]:
        cells = [cell.replace("\n", " ") or "\\ " for cell in row]
        lines.append(f"   * - {cells[0]}")
        lines += [f"     - {cell}" for cell in cells[1:]]
    return lines


def literal(text: object) -> str:
    """``text`` as an rst inline literal (backslashes and backquotes made safe)."""
    value = str(text).replace("\\", "\\\\").replace("`", "\\`")
    return f"``{value}``" if value else "\\ "


class RstDirective(SphinxDirective):
    """A directive that renders generated rst; it must run in an rst context.

    In a MyST page, wrap it in ``{eval-rst}`` (as for autodoc): MyST parses nested content
    as Markdown, which would show the generated rst as text.
    """

    def parse(self, lines: list[str]) -> list[nodes.Node]:
        if type(self.state).__module__.startswith("myst_parser"):
            raise self.error(f"use `{self.name}` inside an {{eval-rst}} block in MyST pages")
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), 0, container)
        return list(container.children)
