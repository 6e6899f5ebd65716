"""Shared helpers of the benchmark scripts: where results go and what run they came from."""

from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def machine() -> str:
    """Describe the machine and stack: CPU, cores, threads, Python, paddle, gymnasium."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    versions = []
    for dist in ("paddlepaddle", "gymnasium"):
        try:
            versions.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            continue
    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    return ", ".join(
        [
            model,
            f"{os.cpu_count()} cores (OMP_NUM_THREADS={threads})",
            f"Python {platform.python_version()}",
            *versions,
        ]
    )


#: What benchmarks write: a change to these alone leaves the code a run measured unchanged.
RESULT_SUFFIXES = {".md", ".json", ".png", ".txt", ".csv"}


def commit() -> str:
    """Return the current git commit, with ``+dirty`` when code differs from it (results files
    under ``benchmarks/`` that earlier runs wrote do not count)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--no-renames"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout
    except OSError:
        return "unknown"
    return head + ("+dirty" if any(_is_code(line[3:]) for line in status.splitlines()) else "")


def _is_code(path: str) -> bool:
    """Whether a changed path (as ``git status`` prints it) is code rather than a result."""
    changed = Path(path.strip('"'))
    return not (changed.parts[:1] == ("benchmarks",) and changed.suffix in RESULT_SUFFIXES)


def command() -> str:
    """Return this benchmark's command line, as run from the repository root."""
    module = Path(os.path.relpath(sys.argv[0], ROOT)).with_suffix("")
    return " ".join(["python -m", ".".join(module.parts), *sys.argv[1:]])


def header(title: str) -> str:
    """Return the markdown header every results file starts with."""
    return (
        f"# {title}\n\n- command: `{command()}`\n- commit: `{commit()}`\n- machine: {machine()}\n\n"
    )


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>/train.py`` from its file, for a benchmark that times or profiles
    ``train(Args(...))`` in its own process (``benchmarks.run`` uses the command line instead).

    Examples are scripts, not an installed package; the module is registered in
    ``sys.modules`` because dataclasses resolve string annotations through it.
    """
    path = ROOT / "examples" / name / "train.py"
    spec = importlib.util.spec_from_file_location(f"examples_{name.lower()}_train", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the {name} example from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Render a GitHub markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
