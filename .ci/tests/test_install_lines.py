"""The install-line check finds, parses and refuses lines as documented (no installs here)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).parent.parent / "install_lines.py"
OURS = ["parl-core", "parl-utils"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with two of our distributions and a wheelhouse of their (empty) wheels."""
    for name in OURS:
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
        wheel = f"{name.replace('-', '_')}-0.1.0-py3-none-any.whl"
        (tmp_path / "wheelhouse").mkdir(exist_ok=True)
        (tmp_path / "wheelhouse" / wheel).touch()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def listing(repo: Path, pages: dict[str, str]) -> subprocess.CompletedProcess[str]:
    for name, text in pages.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["git", "add", *pages], cwd=repo, check=True)
    command = [sys.executable, str(SCRIPT), "--root", str(repo), "--list"]
    command += ["--wheelhouse", str(repo / "wheelhouse")]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_identical_lines_count_once_and_only_shell_and_inline_code_count(repo: Path) -> None:
    result = listing(
        repo,
        {
            "README.md": (
                '```bash\npip install "./parl-core[paddle]" \\\n    ./parl-utils\n'
                "pip install parl-utils   # once published\n```\n\n"
                "```python\n# pip install nothing-here\n```\n\n```text\npip install ./nope\n```\n"
            ),
            "docs/page.rst": (
                "Install it: ``pip install ./parl-utils  ./parl-core[paddle]``.\n\n"
                ".. code-block:: bash\n\n   pip install -q ./parl-core\n\nProse again.\n"
            ),
        },
    )
    assert result.returncode == 0, result.stderr
    assert "3 distinct install lines (4 in the docs)" in result.stdout
    assert "in README.md:3, docs/page.rst:1" in result.stdout
    assert "nothing-here" not in result.stdout and "./nope" not in result.stdout


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("pip install parl-core", "no index has it yet"),
        ("pip install leftpad", "PROMISES in .ci/install_lines.py does not know"),
        ("pip install --extra-index-url x ./parl-core", "teach OPTIONS in .ci/install_lines.py"),
        ("pip install ./parl-remote", "not a folder of this repository"),
    ],
)
def test_a_line_the_check_cannot_vouch_for_fails_saying_why(
    repo: Path, line: str, message: str
) -> None:
    result = listing(repo, {"docs/a.md": f"Text.\n\n```sh\n{line}\n```\n"})
    assert result.returncode == 1
    assert f"docs/a.md:4: `{line}`" in result.stderr and message in result.stderr


def test_mentions_and_the_readers_own_packages_are_not_checked(repo: Path) -> None:
    result = listing(
        repo,
        {"a.md": "Use `pip install -e` or `pip install` here.\n\n`pip install ./my-parl-dqn`\n"},
    )
    assert result.returncode == 0, result.stderr
    assert "not checked: a.md:3" in result.stdout
    assert "0 distinct install lines (0 in the docs)" in result.stdout


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script as a module (registered while the test runs: its dataclasses look it up)."""
    spec = importlib.util.spec_from_file_location("install_lines", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_a_distribution_of_ours_from_anywhere_but_the_wheelhouse_is_refused(
    tmp_path: Path, script: ModuleType
) -> None:
    record = "parl/__init__.py,sha256=ours,10\nparl_core-0.1.0.dist-info/METADATA,sha256=m,5\n"
    wheel = tmp_path / "parl_core-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("parl_core-0.1.0.dist-info/RECORD", record)
    installed = tmp_path / "venv/lib/python3.11/site-packages/parl_core-0.1.0.dist-info"
    installed.mkdir(parents=True)
    check = script.check_from_wheelhouse
    (installed / "RECORD").write_text(record.replace("sha256=m", "sha256=rewritten"))
    checked = check(tmp_path / "venv", {"parl-core": wheel})  # the metadata folder may differ
    assert checked == {"parl-core"}
    (installed / "RECORD").write_text(record.replace("sha256=ours", "sha256=theirs"))
    with pytest.raises(RuntimeError, match="not the wheelhouse's parl_core-0.1.0"):
        check(tmp_path / "venv", {"parl-core": wheel})


def test_a_torch_only_line_promises_the_familys_torch_classes_not_its_paddle_ones(
    script: ModuleType,
) -> None:
    root = Path(__file__).parent.parent.parent
    ours = {"parl-core", "parl-utils", "parl-algos-pg"}

    def checks(words: list[str]) -> list[str | tuple[str, ...]]:
        line = script.parse(words, "", root, ours)
        return script.promises(line)

    torch_only = checks(["./parl-core[torch]", "./parl-utils", "./parl-algos-pg[torch]"])
    both = checks(["./parl-core[paddle,torch]", "./parl-utils", "./parl-algos-pg[torch]"])
    paddle_classes = script.family("PolicyGradient", "PPO")
    assert paddle_classes not in torch_only
    assert "import parl; parl.algorithms.get('PPO', backend='torch')" in torch_only
    assert paddle_classes in both


@pytest.mark.parametrize(
    "words",
    [
        ["torch", "--index-url", "$TORCH_CPU_INDEX"],
        ["--torch-backend", "cpu", "torch"],
    ],
)
def test_the_cpu_torch_line_is_checked_for_the_cpu_build(script: ModuleType, words) -> None:
    line = script.parse(words, "", Path("."), set(OURS))
    assert line.cpu_torch and [w.name for w in line.wanted] == ["torch"]
    assert script.CPU_TORCH_CHECK in script.promises(line)
    assert line.how_checked().startswith("torch's CPU build first, from ")


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["torch", "--index-url", "elsewhere"], "only for torch's CPU build"),
        (["torch", "--torch-backend", "cu128"], "only for torch's CPU build"),
        (["torch", "numpy", "--index-url", "$TORCH_CPU_INDEX"], "must install torch alone"),
    ],
)
def test_an_index_option_for_anything_but_torchs_cpu_build_is_refused(
    script: ModuleType, words: list[str], message: str
) -> None:
    with pytest.raises(script.LineError, match=message):
        script.parse(words, "", Path("."), set(OURS))


def test_a_torch_line_comes_after_the_cpu_build_and_must_keep_it(script: ModuleType) -> None:
    root = Path(__file__).parent.parent.parent
    words = ["./parl-core[torch]", "./parl-utils", "./parl-algos-dqn[torch]"]
    line = script.parse(words, "", root, {*OURS, "parl-algos-dqn"})
    assert line.needs_torch() and not line.cpu_torch
    assert script.promises(line)[-1] == script.CPU_TORCH_CHECK
    assert "torch's CPU build first" in line.how_checked()
    assert script.cpu_torch_source()  # a local wheel, $TORCH_CPU_INDEX or uv's cpu backend


def test_a_published_line_says_it_fails_today(script: ModuleType) -> None:
    line = script.parse(["parl-utils"], "once published", Path("."), set(OURS))
    assert "today this line fails with 'No matching distribution'" in line.how_checked()
    local = script.parse(["./parl-utils"], "", Path(__file__).parent.parent.parent, set(OURS))
    assert line.how_checked() != local.how_checked()
