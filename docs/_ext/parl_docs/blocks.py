"""Sybil parsers and evaluators that run the code blocks of the docs and of docstrings.

A page's blocks run top to bottom in one namespace, in a scratch directory that mirrors the
repository (:mod:`parl_docs.workspace`), so that ``python examples/...`` works and what a
block writes stays out of the checkout. Two markers, written as comments just above a block,
change how it runs:

- ``skip: next "reason"`` (sybil's own skip directive, here with a reason that is required):
  the block is reported as skipped with that reason;
- ``budget: "as shown" -> "as run"``: the block runs with that text replaced, so that a
  long training command runs on a tiny budget through the same code path.

A ``code-block`` directive whose caption reads ``file: PATH`` is not run: it is written to
``PATH`` in the workspace, as a reader saves it, for the blocks after it to use.
"""

from __future__ import annotations

import ast
import doctest
import os
import re
import signal
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from unittest import SkipTest
from weakref import WeakKeyDictionary

from sybil import Document, Example, Region
from sybil.evaluators.doctest import DocTestEvaluator
from sybil.evaluators.python import pad
from sybil.parsers.abstract import AbstractSkipParser, DocTestStringParser
from sybil.parsers.abstract.lexers import LexerCollection
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, FencedCodeBlockLexer
from sybil.parsers.myst import CodeBlockParser as MystCodeBlockParser
from sybil.parsers.myst.lexers import DirectiveInPercentCommentLexer
from sybil.parsers.rest import CodeBlockParser as RestCodeBlockParser
from sybil.parsers.rest.lexers import DirectiveInCommentLexer
from sybil.typing import Lexer

#: Fence languages whose blocks run, and those that are data or output (shown, never run).
PYTHON = "python"
SHELL = frozenset({"bash", "sh", "shell"})
NOT_CODE = frozenset({"text", "toml", "yaml", "ini", "json", "markdown", "rst"})

#: Seconds a shell block may run before it is killed and fails.
SHELL_TIMEOUT_S = 180.0

#: Shell lines that change an environment or fetch from the network: never run by the docs.
_INSTALLS = re.compile(r"^\s*(pip3?|python3? -m pip|uv pip|uv sync|git clone)\b", re.MULTILINE)

_QUOTED = r'"(?:[^"\\]|\\.)*"'
_BUDGET_PAIR = re.compile(rf"\s*({_QUOTED})\s*->\s*({_QUOTED})\s*(?:,|$)")

Budget = list[tuple[str, str]]
_pending_budget: WeakKeyDictionary[Document, Budget] = WeakKeyDictionary()


def parse_budget(arguments: str) -> Budget:
    """Parse ``"old" -> "new"[, "old2" -> "new2"]`` (Python string literals) into pairs."""
    pairs: Budget = []
    position = 0
    text = arguments.strip()
    while position < len(text):
        match = _BUDGET_PAIR.match(text, position)
        if match is None:
            raise ValueError(
                f"malformed budget marker {arguments!r}: write "
                '`budget: "text the page shows" -> "text CI runs"`'
            )
        pairs.append((ast.literal_eval(match[1]), ast.literal_eval(match[2])))
        position = match.end()
    if not pairs:
        raise ValueError('empty budget marker: write `budget: "as shown" -> "as run"`')
    return pairs


def apply_budget(source: str, budget: Budget) -> str:
    """Replace each ``old`` by ``new``; fail if an ``old`` no longer occurs in the block."""
    for old, new in budget:
        if old not in source:
            raise AssertionError(
                f"budget marker: {old!r} does not occur in the block below it; "
                "update the marker to the block's current text"
            )
        source = source.replace(old, new)
    return source


def _take_budget(example: Example) -> Budget:
    return _pending_budget.pop(example.document, [])


def _evaluate_budget(example: Example) -> None:
    if example.document in _pending_budget:
        raise AssertionError("two budget markers without a code block between them")
    _pending_budget[example.document] = example.parsed


def marker_lexers(flavour: str, directive: str) -> list[Lexer]:
    """Lexers of a ``directive: arguments`` comment: rst ``..``, MyST ``%`` or ``<!-- -->``."""
    if flavour == "rest":
        return [DirectiveInCommentLexer(directive=directive)]
    return [
        DirectiveInPercentCommentLexer(directive=directive),
        DirectiveInHTMLCommentLexer(directive=directive),
    ]


class BudgetParser:
    """Parse ``budget:`` markers; the next code block runs with their replacements."""

    def __init__(self, flavour: str) -> None:
        self.lexers = LexerCollection(marker_lexers(flavour, "budget"))

    def __call__(self, document: Document) -> Iterable[Region]:
        for lexed in self.lexers(document):
            pairs = parse_budget(lexed.lexemes["arguments"] or "")
            yield Region(lexed.start, lexed.end, pairs, _evaluate_budget)


class SkipParser(AbstractSkipParser):
    """Sybil's ``skip:`` directive, with the reason required for ``next`` and ``start``."""

    def __init__(self, flavour: str) -> None:
        super().__init__(marker_lexers(flavour, "skip"))

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in super().__call__(document):
            action, reason = region.parsed
            if action in ("next", "start") and not reason:
                line = document.text.count("\n", 0, region.start) + 1
                raise ValueError(
                    f'{document.path}:{line}: "skip: {action}" needs a reason, e.g. '
                    f'skip: {action} "needs a second machine"'
                )
            yield region


def run_python(example: Example) -> None:
    """Execute a Python block in the page's namespace, with its budget applied."""
    __tracebackhide__ = True
    source = apply_budget(str(example.parsed), _take_budget(example))
    padded = pad(source, example.line + example.parsed.line_offset)
    exec(compile(padded, example.path, "exec", dont_inherit=True), example.namespace)
    example.namespace.pop("__builtins__", None)


class DocTestBlock(DocTestEvaluator):
    """Sybil's doctest evaluator that reports ``# doctest: +SKIP`` examples as skipped."""

    def __call__(self, example: Example) -> str:
        if example.parsed.options.get(doctest.SKIP):
            comment = example.parsed.source.split("#")[1:-1]
            reason = "#".join(comment).strip() or "no reason given"
            raise SkipTest(f"doctest +SKIP ({reason}): {example.parsed.source.strip()}")
        if _take_budget(example):
            raise AssertionError("a budget marker cannot apply to a >>> block")
        return super().__call__(example)


DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


class DocTestParser:
    """``>>>`` examples anywhere in a document (docstrings, rst pages)."""

    def __init__(self) -> None:
        self.string_parser = DocTestStringParser(DocTestBlock(DOCTEST_FLAGS))

    def __call__(self, document: Document) -> Iterable[Region]:
        return self.string_parser(document.text, document.path)


FILE_CAPTION = "file: "


def file_target(region: Region) -> str | None:
    """The path of a ``:caption: file: PATH`` block (PATH may be in backquotes), else None."""
    caption = str(region.lexemes.get("options", {}).get("caption", ""))
    if not caption.startswith(FILE_CAPTION):
        return None
    return caption[len(FILE_CAPTION) :].strip().strip("`")


def write_file(example: Example) -> None:
    """Write a ``file:`` block (budget applied) to its path inside the workspace."""
    __tracebackhide__ = True
    target, text = example.parsed
    path = Path(target)
    inside = Path.cwd().resolve()
    if path.is_absolute() or not (inside / path).resolve().is_relative_to(inside):
        raise AssertionError(
            f"file: {target!r} must be a new path inside the page's directory; the "
            "repository's own entries there are links to the checkout, which pages never change"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(apply_budget(text, _take_budget(example)), encoding="utf-8")


def _as_file(region: Region) -> Region | None:
    target = file_target(region)
    if target is None:
        return None
    region.parsed, region.evaluator = (target, str(region.parsed)), write_file
    return region


def _code_block_parser(flavour: str, language: str, evaluator: Callable[[Example], Any]) -> Any:
    parser_class = RestCodeBlockParser if flavour == "rest" else MystCodeBlockParser
    return parser_class(language, evaluator)


class PythonBlockParser:
    """Python blocks: run as code, written as files, or run as doctests (``>>>``).

    In rst pages a separate :class:`DocTestParser` finds every ``>>>`` example, those in
    code blocks included, so this parser leaves them alone there.
    """

    def __init__(self, flavour: str) -> None:
        self.code = _code_block_parser(flavour, PYTHON, run_python)
        self.doctest = (
            DocTestStringParser(DocTestBlock(DOCTEST_FLAGS)) if flavour != "rest" else None
        )

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in self.code(document):
            source = region.parsed
            file_region = _as_file(region)
            if file_region is not None:
                yield file_region
            elif not source.startswith(">>>"):
                yield region
            elif self.doctest is not None:
                for doctest_region in self.doctest(source, document.path):
                    doctest_region.adjust(region, source)
                    yield doctest_region


class BlocksParser:
    """Blocks of the given fence languages, evaluated by ``evaluator``.

    ``keep`` may rewrite a region or drop it (return None); by default every block is kept.
    """

    def __init__(
        self,
        flavour: str,
        languages: Iterable[str],
        evaluator: Callable[[Example], Any],
        keep: Callable[[Region], Region | None] = lambda region: region,
    ) -> None:
        self.parsers = [_code_block_parser(flavour, lang, evaluator) for lang in sorted(languages)]
        self.keep = keep

    def __call__(self, document: Document) -> Iterable[Region]:
        for parser in self.parsers:
            for region in parser(document):
                kept = self.keep(region)
                if kept is not None:
                    yield kept


def shell_parser(flavour: str) -> BlocksParser:
    """``bash``/``sh``/``shell`` blocks: each runs as a ``bash -euo pipefail`` script."""
    return BlocksParser(flavour, SHELL, run_shell)


def file_parser(flavour: str) -> BlocksParser:
    """Data blocks (toml, yaml, ...) captioned ``file: PATH``: written to that path."""
    return BlocksParser(flavour, NOT_CODE, write_file, keep=_as_file)


def _unknown_language(example: Example) -> None:
    language = example.parsed or "(none)"
    known = ", ".join(sorted({PYTHON, *SHELL, *NOT_CODE}))
    raise AssertionError(
        f"code block with language {language!r}: the docs run python and shell blocks and "
        f"show data blocks; give the fence one of: {known}"
    )


class LanguageCheckParser:
    """Fail on fenced blocks whose language is missing or neither run nor declared as data."""

    lexer = FencedCodeBlockLexer(language=r"[^\n]*")

    def __call__(self, document: Document) -> Iterable[Region]:
        for lexed in self.lexer(document):
            language = lexed.lexemes["language"].strip()
            if language.startswith("{") or language in {PYTHON, *SHELL, *NOT_CODE}:
                continue
            yield Region(lexed.start, lexed.end, language, _unknown_language)


def parsers(flavour: str) -> list[Any]:
    """Every parser a page needs: ``"myst"`` (Markdown) or ``"rest"``.

    An rst page also runs its bare ``>>>`` paragraphs; a MyST page fails on fences whose
    language is neither run nor shown as data.
    """
    common = [
        SkipParser(flavour),
        BudgetParser(flavour),
        PythonBlockParser(flavour),
        shell_parser(flavour),
        file_parser(flavour),
    ]
    return [*common, DocTestParser() if flavour == "rest" else LanguageCheckParser()]


def run_shell(example: Example) -> None:
    """Run a shell block in the page's workspace; fail with its output if it exits non-zero."""
    __tracebackhide__ = True
    source = apply_budget(str(example.parsed), _take_budget(example))
    if _INSTALLS.search(source):
        raise AssertionError(
            "this block installs packages or clones a repository, which the docs never do "
            'to the environment they run in: put `skip: next "why"` above it'
        )
    code, output = _run_bash(source, Path.cwd())
    if code != 0:
        raise AssertionError(f"shell block exited with {code}:\n{source}\n--- output ---\n{output}")


def _run_bash(source: str, cwd: Path) -> tuple[int, str]:
    process = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", source],
        cwd=cwd,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, so a timeout stops its children too
    )
    try:
        output, _ = process.communicate(timeout=SHELL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return -1, f"killed after {SHELL_TIMEOUT_S:.0f} s\n{_tail(output)}"
    return process.returncode, _tail(output)


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])
