"""The port-fidelity run's own parts: the edits it applies, how it reads a run, what it lists.

Running PARL's programs needs a PARL clone (``nox -s port_fidelity -- --parl PATH``); these
check the pieces without one, on small programs written here.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "port_fidelity"))

import programs
import run


def _program(folder: Path, text: str, **fields: object) -> programs.Program:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.py").write_text(text)
    return programs.Program(folder.name, "paddle", **fields)  # type: ignore[arg-type]


def test_the_gym_import_and_the_listed_edits_are_applied(tmp_path: Path) -> None:
    folder = tmp_path / "prog"
    _program(folder, "import gym\nfrom gym import spaces\nMAX_EPISODE = 800\nADDR = 'x:1'\n")
    edits = (
        programs.const("train.py", "MAX_EPISODE", "3"),
        programs.Edit("train.py", r"'x:1'", "'{xparl}'", "the run's cluster"),
    )
    run.apply_edits(folder, edits, "127.0.0.1:9")
    assert (folder / "train.py").read_text() == (
        "import gymnasium as gym\nfrom gymnasium import spaces\nMAX_EPISODE = 3\n"
        "ADDR = '127.0.0.1:9'\n"
    )
    with pytest.raises(run.EditError, match="no longer applies"):
        run.apply_edits(folder, (programs.const("train.py", "GONE", "1"),), None)


@pytest.mark.parametrize(
    ("code", "output", "expected"),
    [
        (0, "episode 1 reward 20\n", "runs (exit 0, 3 s)"),
        (None, "episode 1\n", "runs (stopped at 3 s, no error)"),
        (None, "ValueError: bad\n", "stuck after an error: ValueError: bad"),
        (1, "ModuleNotFoundError: No module named 'smac'\n", "env does not install (smac)"),
        (1, "ModuleNotFoundError: No module named 'paddle'\n", "fails: ModuleNotFoundError"),
    ],
)
def test_a_run_is_read_from_its_exit_and_its_last_error(code, output, expected) -> None:
    program = programs.Program("p", "paddle", env_modules=("smac",))
    assert run.verdict(program, code, output, 3.0).startswith(expected)


def test_a_file_its_readme_downloads_is_named_as_such() -> None:
    program = programs.Program("p", "paddle", data_files=("refmoves1k_kaggle",))
    output = "FileNotFoundError: [Errno 2] No such file or directory: 'refmoves1k_kaggle'\n"
    assert run.verdict(program, 1, output, 1.0).startswith("data not here: refmoves1k_kaggle")


def test_a_torch_algorithm_that_is_missing_is_named_as_such() -> None:
    program = programs.Program("p", "torch")
    output = "AttributeError: no torch implementation of 'TD3' is installed; ...\n"
    assert run.verdict(program, 1, output, 1.0).startswith("torch algorithm missing")


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_a_program_that_hangs_is_stopped_with_its_children(tmp_path: Path) -> None:
    hang = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    program = _program(tmp_path / "work" / "hang", hang)
    result = run.run_program(program, tmp_path / "work" / "hang", timeout=3, xparl=None)
    assert result.startswith("runs (stopped at 3 s"), result
    pid = int((tmp_path / "work" / "hang" / "child.pid").read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the program's child outlived the stop"


def test_every_listed_edit_says_why_and_is_of_a_known_kind() -> None:
    names = [program.name for program in programs.PROGRAMS]
    assert len(names) == len(set(names)) == 15 + 22
    for program in programs.PROGRAMS:
        assert program.backend in ("paddle", "torch")
        for edit in program.edits:
            assert edit.kind in ("port", "budget") and edit.reason, (program.folder, edit)
