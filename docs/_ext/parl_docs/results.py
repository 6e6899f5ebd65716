"""Every committed results file of a benchmark, found by path pattern, on the page.

In a MyST page::

    ```{benchmark-files} benchmarks/ac/results/SAC-*.md
    :heading-offset: 2
    ```

becomes, before MyST reads the page, one ``{include}`` per matching Markdown file (sorted;
several patterns may be given), so a results file committed later (another environment, a new
seed) appears without editing the page. The included file's tables and the PNG it links come
as they are. A file that links no image gets a learning curve generated from the same run:
from the JSON of the same stem beside it (the one results schema,
:mod:`parl.utils.results`) or, failing that, from the file's own per-run evaluation
lines (``- LABEL: STEP: RETURN, STEP: RETURN, ...``); with neither, the page says that the
benchmark records no curve. No match at all is not an error: the page says "not yet
benchmarked" and names the pattern. ``:curves: none`` leaves curves out (throughput tables,
which are no learning runs).

It is a textual expansion (Sphinx's ``source-read``, fences found with markdown-it, MyST's own
parser) rather than a directive because MyST's own ``{include}`` is what handles headings
(``:heading-offset:``) and images relative to the included file (``:relative-images:``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from parl.utils.results import load_results, plot_curves

from markdown_it import MarkdownIt
from sphinx.application import Sphinx

from parl_docs.benchmarks import GENERATED

Curve = list[tuple[int, float]]

_OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]+\)")
_EVAL_LINE = re.compile(r"^- (?P<label>[^:\n]+): (?P<pairs>-?\d+: -?[\d.]+(?:, -?\d+: -?[\d.]+)*)$")


def matching_files(root: Path, patterns: Iterable[str]) -> list[Path]:
    """The Markdown files under ``root`` that match any pattern, sorted, each once."""
    found = {path for pattern in patterns for path in root.glob(pattern)}
    return sorted(path for path in found if path.suffix == ".md" and path.is_file())


def curves_from_json(path: Path) -> dict[str, dict[str, Curve]]:
    """Environment → run label → curve, from a results file (the one results schema)."""
    return {
        env: {f"seed {run.seed}": list(run.evals) for run in entry.runs if run.evals}
        for env, entry in load_results(path).items()
    }


def curves_from_markdown(text: str) -> dict[str, dict[str, Curve]]:
    """Group → run label → curve, from lines ``- DQN seed 0: 2503: 157, 5001: 257``.

    The group is the label without its ``seed N`` part (one figure per algorithm).
    """
    groups: dict[str, dict[str, Curve]] = {}
    for line in text.splitlines():
        match = _EVAL_LINE.match(line.strip())
        if match is None:
            continue
        label = match["label"].strip()
        group = re.sub(r"\s*seed\s+\d+\s*", " ", label).strip() or "runs"
        pairs = [pair.split(": ") for pair in match["pairs"].split(", ")]
        groups.setdefault(group, {})[label] = [(int(s), float(v)) for s, v in pairs]
    return groups


def generated_curves(results: Path, srcdir: Path) -> list[tuple[str, Path]]:
    """Draw the curves of a results file that links none; return ``(title, png)`` pairs."""
    sibling = results.with_suffix(".json")
    if sibling.is_file():
        groups = curves_from_json(sibling)
    else:
        groups = curves_from_markdown(results.read_text(encoding="utf-8"))
    figures = []
    for group, curves in groups.items():
        if not curves:
            continue
        slug = re.sub(r"[^\w.-]+", "-", f"{results.parent.name}-{results.stem}-{group}")
        png = srcdir / GENERATED / f"{slug}.png"
        title = f"{group} ({results.parent.name}/{results.name})"
        plot_curves(title, curves, png)
        figures.append((title, png))
    return figures


def refuse_block_quotes(path: Path, text: str) -> None:
    """Raise if a results file has a block quote: there it is a wrapped line that begins with
    a comparison (``>= 475``), which Markdown would show as a quote of ``= 475``."""
    for token in MarkdownIt("commonmark").parse(text):
        if token.type == "blockquote_open" and token.map is not None:
            raise ValueError(
                f"{path}, line {token.map[0] + 1}: a line that starts with '>' is a Markdown "
                "block quote; rewrap the text so that the line starts otherwise, or write ≥"
            )


def render(
    srcdir: Path, docname: str, patterns: list[str], heading_offset: int, curves: bool = True
) -> str:
    """The Markdown that replaces one ``{benchmark-files}`` block."""
    root = srcdir.parent
    files = matching_files(root, patterns)
    if not files:
        shown = ", ".join(f"`{p}`" for p in patterns)
        return f"**Not yet benchmarked**: no committed results file matches {shown}.\n"
    page_dir = (srcdir / docname).parent
    parts = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        refuse_block_quotes(path, text)
        include = os.path.relpath(path, page_dir)
        parts.append(
            f"```{{include}} {include}\n:heading-offset: {heading_offset}\n:relative-images:\n```\n"
        )
        if not curves or _IMAGE.search(text):
            continue
        figures = generated_curves(path, srcdir)
        data = path.with_suffix(".json") if path.with_suffix(".json").is_file() else path
        for title, png in figures:
            parts.append(f"![learning curves of {title}]({os.path.relpath(png, page_dir)})\n")
            parts.append(
                f"*Evaluation return against environment steps ({title}), drawn from "
                f"`{data.relative_to(root).as_posix()}` when this site was built.*\n"
            )
        if not figures:
            parts.append(
                "*This benchmark records no evaluations over time, so it has no learning curve.*\n"
            )
    return "\n".join(parts)


def blocks(text: str) -> list[tuple[int, int, list[str], dict[str, str]]]:
    """``(first line, end line, patterns, options)`` of each top-level ``{benchmark-files}``
    fence; one shown inside another fence (as an example) is content, not a block."""
    found = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type != "fence" or not token.info.startswith("{benchmark-files}"):
            continue
        assert token.map is not None
        patterns = token.info[len("{benchmark-files}") :].split()
        matches = (_OPTION.match(line.strip()) for line in token.content.splitlines())
        options = {m["key"]: m["value"].strip() for m in matches if m}
        found.append((token.map[0], token.map[1], patterns, options))
    return found


def expand(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: replace each ``{benchmark-files}`` block of the page."""
    if "{benchmark-files}" not in source[0]:
        return
    srcdir = Path(app.srcdir)
    lines = source[0].splitlines(keepends=True)
    for first, end, patterns, options in reversed(blocks(source[0])):
        where = f"{docname}, line {first + 1}: {{benchmark-files}}"
        if not patterns:
            raise ValueError(f"{where} needs at least one path pattern")
        unknown = set(options) - {"heading-offset", "curves"}
        if unknown:
            raise ValueError(f"{where} has no option {sorted(unknown)}")
        if options.get("curves", "auto") not in ("auto", "none"):
            raise ValueError(f"{where}: `:curves:` is 'auto' or 'none'")
        for path in matching_files(srcdir.parent, patterns):
            app.env.note_dependency(str(path))
        offset = int(options.get("heading-offset", 2))
        text = render(srcdir, docname, patterns, offset, options.get("curves") != "none")
        lines[first:end] = [text + "\n"]
    source[0] = "".join(lines)


def setup(app: Sphinx) -> None:
    app.connect("source-read", expand)
