"""An offline check of every link of the built HTML site.

After an HTML build, every ``href``/``src`` without a scheme in every page must name a file of
the output (or a folder with an ``index.html``), and its ``#fragment`` an ``id`` of that page;
and no page may load anything from the network (a script, a stylesheet, a font, an image with
an ``http(s)://`` or ``//`` address): the site works offline, so math is rendered by a MathJax
shipped in ``_static``. Each problem is a Sphinx warning with its page, so ``-W`` fails the
build. External URLs are never visited: the build needs no network.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

_REFERENCES = {("a", "href"), ("link", "href"), ("img", "src"), ("script", "src")}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.references: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif (tag, name) in _REFERENCES:
                self.references.append((tag, value))


@cache
def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def broken_links(outdir: Path) -> Iterator[tuple[Path, str, str]]:
    """Yield ``(page, link, problem)`` for each broken internal link and each network load."""
    _parse.cache_clear()
    for page in sorted(outdir.rglob("*.html")):
        for tag, link in _parse(page).references:
            problem = _problem(outdir, page, tag, link)
            if problem:
                yield page, link, problem


def _problem(outdir: Path, page: Path, tag: str, link: str) -> str | None:
    parts = urlsplit(link)
    if parts.scheme in ("http", "https") or parts.netloc:
        # A link to another site is for the reader to follow; anything else is loaded.
        return None if tag == "a" else "loaded from the network: ship the file in _static"
    if parts.scheme:
        return None
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    if not target.is_relative_to(outdir.resolve()):
        return "points outside the built site"
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file():
        return "no such file in the built site"
    fragment = unquote(parts.fragment)
    if fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
        return f"{target.name} has no anchor #{fragment}"
    return None


def check_links(app: Sphinx, exception: Exception | None) -> None:
    """Warn about every broken link once an HTML build has succeeded."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    count = 0
    for page, link, problem in broken_links(outdir):
        count += 1
        logger.warning(
            "bad link %r: %s",
            link,
            problem,
            location=str(page.relative_to(outdir)),
            type="parl_docs",
            subtype="link",
        )
    logger.info("links checked: %d bad", count)


def setup(app: Sphinx) -> None:
    # Last: other extensions copy their files into the output when the build finishes.
    app.connect("build-finished", check_links, priority=900)
