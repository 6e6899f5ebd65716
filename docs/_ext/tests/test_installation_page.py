"""The installation page against the registry: the names its check prints, and the algorithms
its table gives each family (``nox -s docs`` installs every family)."""

from __future__ import annotations

import ast
import re
from importlib.metadata import entry_points
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "guide" / "installation.md"


def families() -> dict[str, set[str]]:
    """Distribution name to the algorithm names its entry points register."""
    found: dict[str, set[str]] = {}
    for point in entry_points(group="parl.algorithms"):
        if point.dist is not None and point.dist.name.startswith("parl-algos-"):
            found.setdefault(point.dist.name, set()).add(point.name)
    return found


def test_the_check_prints_every_registered_algorithm() -> None:
    text = PAGE.read_text(encoding="utf-8")
    shown = text.split("## Check the installation", 1)[1].split("```text\n", 1)[1]
    printed = ast.literal_eval(shown.splitlines()[1])
    assert printed == sorted(set().union(*families().values()))


def test_each_family_row_names_all_its_algorithms() -> None:
    rows = {
        match.group(1): match.group(2)
        for match in re.finditer(
            r"^\| `(parl-algos-[a-z]+)` \|[^|]*\|([^|]*)\|", PAGE.read_text(), re.M
        )
    }
    for family, names in families().items():
        named = set(re.findall(r"`([A-Za-z0-9]+)`", rows[family]))
        assert names <= named, f"the row of {family} leaves out {sorted(names - named)}"
