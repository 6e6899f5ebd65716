"""The block runner: pages run in order, markers apply, failures and skips are reported."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from unittest import SkipTest

import psutil
import pytest
from parl_docs.blocks import apply_budget, parse_budget, parsers
from parl_docs.runner import module_name
from parl_docs.workspace import PageRun
from sybil import Sybil


def run_page(tmp_path: Path, text: str, suffix: str = ".md") -> list[str]:
    """Run every block of a page; return each block's outcome ("ok", "skip: …", "fail: …")."""
    root = tmp_path / "repo"
    root.mkdir(exist_ok=True)
    (root / "marker.txt").write_text("from the repository")
    page = root / f"page{suffix}"
    page.write_text(text)
    flavour = "myst" if suffix == ".md" else "rest"
    document = Sybil(parsers(flavour), path=str(root)).parse(page)
    run = PageRun(root)
    run.setup(document.namespace)
    outcomes = []
    try:
        for example in document:
            try:
                example.evaluate()
                outcomes.append("ok")
            except SkipTest as skip:
                outcomes.append(f"skip: {skip}")
            except Exception as error:
                outcomes.append(f"fail: {error}")
    finally:
        run.teardown(document.namespace)
    return outcomes


def test_python_blocks_share_one_namespace_and_a_failure_is_reported(tmp_path: Path) -> None:
    page = "```python\nx = 2\n```\n\n```python\nassert x == 3, 'x is 2'\n```\n"
    assert run_page(tmp_path, page) == ["ok", "fail: x is 2"]


def test_doctest_blocks_compare_their_output(tmp_path: Path) -> None:
    page = "```python\n>>> 1 + 1\n2\n>>> 1 + 1\n3\n```\n"
    outcomes = run_page(tmp_path, page)
    assert outcomes[0] == "ok"
    assert outcomes[1].startswith("fail:") and "Expected:\n    3\nGot:\n    2" in outcomes[1]


def test_shell_blocks_run_in_a_scratch_copy_of_the_repository(tmp_path: Path) -> None:
    page = "```bash\ncat marker.txt\necho made > new.txt\n```\n\n```bash\nexit 3\n```\n"
    outcomes = run_page(tmp_path, page)
    assert outcomes[0] == "ok"
    assert outcomes[1].startswith("fail: shell block exited with 3")
    assert not (tmp_path / "repo" / "new.txt").exists()


def test_a_shell_failure_shows_the_output(tmp_path: Path) -> None:
    outcomes = run_page(tmp_path, "```bash\necho something useful\nfalse\n```\n")
    assert "something useful" in outcomes[0]


def test_skip_needs_a_reason_and_reports_it(tmp_path: Path) -> None:
    page = '<!-- skip: next "needs a second machine" -->\n\n```bash\nexit 1\n```\n'
    assert run_page(tmp_path, page) == ["ok", "skip: needs a second machine"]
    with pytest.raises(ValueError, match="needs a reason"):
        run_page(tmp_path, "<!-- skip: next -->\n\n```bash\nexit 1\n```\n")


def test_budget_replaces_text_and_fails_when_stale(tmp_path: Path) -> None:
    page = '<!-- budget: "exit 1" -> "exit 0" -->\n\n```bash\nexit 1\n```\n'
    assert run_page(tmp_path, page) == ["ok", "ok"]
    stale = '<!-- budget: "--steps 100" -> "--steps 1" -->\n\n```python\nx = 1\n```\n'
    assert "does not occur" in run_page(tmp_path, stale)[1]


def test_budget_marker_syntax() -> None:
    assert parse_budget('"a" -> "b", "c \\"d\\"" -> "e"') == [("a", "b"), ('c "d"', "e")]
    assert apply_budget("run a a", [("a", "b")]) == "run b b"
    with pytest.raises(ValueError, match="malformed"):
        parse_budget("a -> b")


def test_installs_are_refused_unless_skipped(tmp_path: Path) -> None:
    outcomes = run_page(tmp_path, "```bash\npip install something\n```\n")
    assert outcomes[0].startswith("fail: this block installs packages")


def test_a_block_without_a_known_language_fails(tmp_path: Path) -> None:
    outcomes = run_page(tmp_path, "```\nsome text\n```\n\n```text\nfine\n```\n")
    assert len(outcomes) == 1 and "give the fence one of" in outcomes[0]


def test_file_caption_writes_the_block_for_later_blocks(tmp_path: Path) -> None:
    page = (
        "```{code-block} python\n:caption: file: pkg/answer.py\n\nANSWER = 42\n```\n\n"
        "```{code-block} python\n:caption: file: `pkg/__init__.py`\n\n```\n\n"
        "```python\nfrom pkg.answer import ANSWER\nassert ANSWER == 42\n```\n"
    )
    assert run_page(tmp_path, page) == ["ok", "ok", "ok"]


def test_a_file_block_never_writes_into_the_checkout(tmp_path: Path) -> None:
    for target in ("marker.txt", "../outside.txt"):
        page = f"```{{code-block}} text\n:caption: file: {target}\n\nchanged\n```\n"
        assert "must be a new path inside the page's directory" in run_page(tmp_path, page)[0]
    assert (tmp_path / "repo" / "marker.txt").read_text() == "from the repository"


def test_rst_pages_run_code_blocks_and_doctests(tmp_path: Path) -> None:
    page = ".. code-block:: python\n\n   y = 5\n\n>>> y + 1\n6\n"
    assert run_page(tmp_path, page, suffix=".rst") == ["ok", "ok"]


def test_doctest_skip_is_reported_with_its_comment(tmp_path: Path) -> None:
    page = "```python\n>>> connect()  # needs a cluster  # doctest: +SKIP\n```\n"
    assert run_page(tmp_path, page) == [
        "skip: doctest +SKIP (needs a cluster): connect()  # needs a cluster  # doctest: +SKIP"
    ]


def test_module_names_follow_the_src_layout() -> None:
    assert module_name(Path("/r/parl-utils/src/parl/utils/logger.py")) == "parl.utils.logger"
    assert module_name(Path("/r/parl-core/src/parl/__init__.py")) == "parl"
    with pytest.raises(ValueError, match="src/"):
        module_name(Path("/r/elsewhere/module.py"))


def test_pages_do_not_leak_modules_or_path_entries(tmp_path: Path) -> None:
    first = (
        "```{code-block} python\n:caption: file: lib/helper.py\n\nVALUE = 1\n```\n\n"
        "```python\nimport sys\nsys.path.insert(0, 'lib')\nimport helper\n```\n"
    )
    assert run_page(tmp_path, first) == ["ok", "ok"]
    second = "```python\nimport helper\n```\n"
    assert run_page(tmp_path, second)[0].startswith("fail: No module named 'helper'")
    assert run_page(tmp_path, first) == ["ok", "ok"]


def test_an_xparl_cluster_a_page_starts_is_stopped_after_it(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pids_file = tmp_path / "pids.json"
    page = (
        f"```bash\nxparl start --port {port} --cpu_num 1\n```\n\n"
        "```python\nimport json, pathlib, os\n"
        f"record = json.loads(pathlib.Path(os.environ['XPARL_HOME'], 'clusters', '{port}', "
        "'cluster.json').read_text())\n"
        "processes = [record['master'], *record['workers']]\n"
        f"pathlib.Path({str(pids_file)!r}).write_text(json.dumps(processes))\n```\n"
    )
    assert run_page(tmp_path, page) == ["ok", "ok"]
    for process in json.loads(pids_file.read_text()):
        assert not _still_runs(process), f"the page's xparl process {process} still runs"


def _still_runs(record: dict[str, float]) -> bool:
    """Alive and the same process; a zombie has exited (a container's init may never reap it)."""
    try:
        process = psutil.Process(int(record["pid"]))
        started, status = process.create_time(), process.status()
    except psutil.NoSuchProcess:
        return False
    return abs(started - record["create_time"]) < 0.05 and status != psutil.STATUS_ZOMBIE
