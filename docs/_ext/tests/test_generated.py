"""Generated content: config tables, the algorithm list, benchmark figures, the link check."""

from __future__ import annotations

import io
import json
import typing
from pathlib import Path

import parl
from parl.core.config import AlgorithmConfig
from parl.utils.results import load_results, plot_curves

import pytest
from parl_docs.algorithms import (
    algorithm_pages,
    describe_type,
    field_row,
    front_matter,
    summary,
)
from parl_docs.links import broken_links
from parl_docs.results import blocks, curves_from_json, curves_from_markdown, render
from pydantic import Field, PositiveFloat
from sphinx.application import Sphinx

RUN = {
    "env_id": "Toy-v0",
    "seed": 0,
    "env_steps": 200,
    "wall_s": 1.0,
    "sps": 200.0,
    "final_eval_return": 9.0,
    "best_eval_return": 9.0,
    "best_eval_step": 200,
    "target": None,
    "first_target_step": None,
    "evals": [[100, 5.0], [200, 9.0]],
    "command": "python bench.py",
    "commit": "abc1234",
    "machine": "a VM",
}
RESULTS = {"Toy-v0": {"algo": "Toy", "config": {"lr": 0.1}, "runs": [RUN, {**RUN, "seed": 1}]}}


class ToyConfig(AlgorithmConfig):
    """Hyperparameters of a toy."""

    clip: float = Field(0.2, gt=0.0, le=1.0)
    """Clip range."""
    norm: PositiveFloat | None = None
    """Gradient norm bound; None disables it."""
    mode: typing.Literal["a", "b"] = "a"


def test_types_and_bounds_come_from_the_annotations() -> None:
    fields = ToyConfig.model_fields
    assert field_row("clip", fields["clip"]) == [
        "``clip``",
        "``float``",
        "``0.2``",
        "> 0.0, ≤ 1.0",
        "Clip range.",
    ]
    assert describe_type(fields["norm"].annotation) == ("float | None", ["> 0"])
    assert field_row("mode", fields["mode"])[1] == "``'a' | 'b'``"
    assert field_row("mode", fields["mode"])[4] == "**undocumented**"


def test_the_summary_is_the_whole_first_paragraph() -> None:
    class Wrapped:
        """Soft Actor-Critic, SAC (Haarnoja et al., 2018), with automatic
        entropy tuning (Haarnoja et al., 2018).

        Details that stay on the algorithm's page.
        """

    assert summary(Wrapped) == (
        "Soft Actor-Critic, SAC (Haarnoja et al., 2018), with automatic entropy tuning "
        "(Haarnoja et al., 2018)."
    )


def test_the_capability_table_has_a_row_for_every_installed_algorithm() -> None:
    index = Path(__file__).parents[2] / "algorithms" / "index.md"
    section = index.read_text(encoding="utf-8").split("## What each algorithm can do", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # no header
    named = [name.strip() for row in rows for name in row.split("|")[1].split(",")]
    assert sorted(named) == sorted(parl.algorithms.names())


def test_front_matter_declares_the_algorithms_of_a_page(tmp_path: Path) -> None:
    (tmp_path / "algorithms").mkdir()
    (tmp_path / "algorithms" / "dqn.md").write_text("---\nalgorithms: [DQN, DDQN]\n---\n# DQN\n")
    (tmp_path / "algorithms" / "index.md").write_text("# All\n")
    assert algorithm_pages(tmp_path) == {"algorithms/dqn": ["DQN", "DDQN"]}
    (tmp_path / "broken.md").write_text("---\nalgorithms: [DQN]\n# never closed\n")
    with pytest.raises(ValueError, match="never closed"):
        front_matter(tmp_path / "broken.md")


def test_a_malformed_results_file_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"Toy-v0": {**RESULTS["Toy-v0"], "runs": [{"seed": 0}]}}))
    with pytest.raises(
        ValueError,
        match=r"results.json is not a benchmark results file(.|\n)*"
        r"env_steps",
    ):
        load_results(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not a benchmark results file(.|\n)*Invalid JSON"):
        load_results(path)
    with pytest.raises(ValueError, match="cannot read"):
        load_results(tmp_path / "missing.json")


def build(tmp_path: Path, pages: dict[str, str]) -> tuple[Path, str]:
    """Build a small site with the extension; return the output folder and the warnings."""
    src = tmp_path / "docs"
    (src / "algorithms").mkdir(parents=True)
    (tmp_path / "results.json").write_text(json.dumps(RESULTS))
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "Toy-v0.md").write_text(
        "# Toy on Toy-v0\n\n| seed |\n|---|\n| 0 |\n\n![c](Toy-v0.png)\n"
    )
    plot_curves("committed", {"seed 0": [(1, 1.0)]}, bench / "Toy-v0.png")
    (src / "conf.py").write_text('extensions = ["myst_parser", "parl_docs"]\n')
    for name, text in pages.items():
        (src / name).write_text(text)
    warnings = io.StringIO()
    app = Sphinx(
        str(src),
        str(src),
        str(tmp_path / "html"),
        str(tmp_path / "doctrees"),
        "html",
        status=None,
        warning=warnings,
        freshenv=True,
    )
    app.build()
    return tmp_path / "html", warnings.getvalue()


INDEX = """# Site

```{toctree}
algorithms/dqn
algorithms/nothing
```

```{eval-rst}
.. algorithm-list::

.. benchmark-results:: results.json
   :title: Toy
```

[a broken anchor](algorithms/dqn.md#no-such-heading)

## Results

```{benchmark-files} bench/Toy-*.md
:heading-offset: 1
```

```{benchmark-files} bench/Nothing-*.md
```
"""


def test_a_site_gets_tables_figures_and_checked_links(tmp_path: Path) -> None:
    out, warnings = build(
        tmp_path,
        {
            "index.md": INDEX,
            "algorithms/dqn.md": "---\nalgorithms: [DQN]\n---\n# DQN\n\n```{eval-rst}\n"
            ".. algorithm-config:: DQN\n```\n\n<a href='gone.html'>x</a>\n",
            "algorithms/nothing.md": "---\nalgorithms: [NotInstalledAlgo]\n---\n# Gone\n",
            # A directive that generates rst, used outside {eval-rst}: refused, with the fix.
            "misuse.md": "# Misuse\n\n```{algorithm-config} DQN\n```\n",
        },
    )
    index = (out / "index.html").read_text()
    dqn = (out / "algorithms" / "dqn.html").read_text()
    assert "Discount factor" in dqn and "≤ 1.0" in dqn
    assert "Deep Q-Network" in index and "algorithms/dqn.html" in index
    assert "clip_param" in index  # PPO has no page here: its table comes with the list
    assert '<code class="docutils literal notranslate"><span class="pre">abc1234' in index
    assert list((tmp_path / "docs" / "_generated" / "benchmarks").glob("*Toy-v0.png"))
    assert "Toy on Toy-v0" in index and (out / "_images" / "Toy-v0.png").is_file()
    assert "Not yet benchmarked" in index and "bench/Nothing-*.md" in index
    assert not (out / "algorithms" / "nothing.html").exists()
    assert "nonexisting document 'algorithms/nothing'" in warnings
    assert "bad link 'gone.html'" in warnings
    assert "misuse.md" in warnings and "inside an {eval-rst} block" in warnings


def test_the_link_check_finds_missing_files_anchors_and_network_loads(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        '<p id="here"></p><a href="b.html#there">b</a>'
        '<a href="#here">ok</a><a href="https://x.org/">ext</a><a href="mailto:x@y.z">m</a>'
        '<script src="https://cdn.x.org/mathjax.js"></script><img src="data:image/png;base64,">'
    )
    (tmp_path / "b.html").write_text(
        '<img src="missing.png"><a href="../../out.html">out</a>'
        '<link rel="stylesheet" href="//fonts.x.org/a.css">'
    )
    problems = {(page.name, link): problem for page, link, problem in broken_links(tmp_path)}
    network = "loaded from the network: ship the file in _static"
    assert problems == {
        ("a.html", "b.html#there"): "b.html has no anchor #there",
        ("a.html", "https://cdn.x.org/mathjax.js"): network,
        ("b.html", "missing.png"): "no such file in the built site",
        ("b.html", "../../out.html"): "points outside the built site",
        ("b.html", "//fonts.x.org/a.css"): network,
    }


EVAL_LINES = """| algo | seed |
|---|---|

- DQN seed 0: 100: 5, 200: 9.5
- DQN seed 1: 100: -3, 200: 7
- DDQN seed 0: 100: 1, 200: 2
"""


def test_curves_come_from_a_results_file_or_evaluation_lines(tmp_path: Path) -> None:
    by_env = tmp_path / "a.json"
    by_env.write_text(json.dumps(RESULTS))
    assert curves_from_json(by_env) == {
        "Toy-v0": {"seed 0": [(100, 5.0), (200, 9.0)], "seed 1": [(100, 5.0), (200, 9.0)]}
    }
    assert curves_from_markdown(EVAL_LINES) == {
        "DQN": {"DQN seed 0": [(100, 5.0), (200, 9.5)], "DQN seed 1": [(100, -3.0), (200, 7.0)]},
        "DDQN": {"DDQN seed 0": [(100, 1.0), (200, 2.0)]},
    }


def test_results_files_are_included_and_curves_drawn_only_when_missing(tmp_path: Path) -> None:
    src, bench = tmp_path / "docs", tmp_path / "bench"
    src.mkdir()
    bench.mkdir()
    (bench / "with-image.md").write_text("# A\n\n![c](with-image.png)\n")
    (bench / "lines.md").write_text(EVAL_LINES)
    (bench / "table-only.md").write_text("# C\n\n| seed |\n|---|\n| 0 |\n")
    text = render(src, "algorithms/toy", ["bench/*.md"], heading_offset=2)
    assert text.count("```{include} ../../bench/") == 3
    assert ":heading-offset: 2" in text and ":relative-images:" in text
    generated = sorted(p.name for p in (src / "_generated" / "benchmarks").iterdir())
    assert generated == ["bench-lines-DDQN.png", "bench-lines-DQN.png"]
    assert "drawn from `bench/lines.md`" in text
    assert "records no evaluations over time" in text  # table-only.md
    quiet = render(src, "algorithms/toy", ["bench/table-only.md"], 2, curves=False)
    assert "records no" not in quiet
    missing = render(src, "algorithms/toy", ["bench/none-*.md", "bench/x.md"], 2)
    assert missing.startswith("**Not yet benchmarked**") and "`bench/none-*.md`" in missing


def test_a_results_line_starting_with_a_comparison_is_refused(tmp_path: Path) -> None:
    src, bench = tmp_path / "docs", tmp_path / "bench"
    src.mkdir()
    bench.mkdir()
    (bench / "wrapped.md").write_text("# A\n\nSeeds 3 and 4 (first\n>= 475 at 110k).\n")
    with pytest.raises(ValueError, match=r"wrapped.md, line 4: a line that starts with '>'"):
        render(src, "algorithms/toy", ["bench/*.md"], heading_offset=2)


def test_only_top_level_benchmark_files_fences_expand() -> None:
    page = (
        "# P\n\n```{benchmark-files} a/*.md b.md\n:curves: none\n```\n\n"
        "````markdown\n```{benchmark-files} shown/*.md\n```\n````\n"
    )
    assert blocks(page) == [(2, 5, ["a/*.md", "b.md"], {"curves": "none"})]
