"""The plugin guide and the plugin template agree on what a plugin depends on."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import Requirement

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[3]
GUIDES = ["docs/guide/writing-an-algorithm-plugin.md", "docs/guide/custom-algorithm.md"]


def test_the_guides_depend_on_parl_core_as_the_template_does() -> None:
    template = tomllib.loads((ROOT / "examples/third_party_plugin/pyproject.toml").read_text())
    core = [Requirement(r) for r in template["project"]["dependencies"]]
    (expected,) = [r for r in core if r.name == "parl-core"]
    for guide in GUIDES:
        text = (ROOT / guide).read_text()
        named = re.findall(r"(?:Depend on `|dependencies = \[\")(parl-core[^`\"]*)", text)
        assert named, f"{guide} names no parl-core dependency"
        for requirement in map(
            Requirement, (n.replace("X.Y", "0.1").replace("X+1", "1") for n in named)
        ):
            assert requirement.extras == expected.extras, (
                f"{guide}: {requirement} (template: {expected})"
            )
