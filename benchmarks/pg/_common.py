"""What every pg benchmark records: the commit, the machine, and a markdown results file."""

from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>/train.py`` as a module, with its folder on ``sys.path``."""
    folder = REPO / "examples" / name
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"{name.lower()}_train", folder / "train.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first: dataclasses look their module up in sys.modules while it executes.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def commit() -> str:
    """The checked-out commit, marked ``+dirty`` when the tree has uncommitted changes."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "parl-algos-pg", "examples", "benchmarks/pg"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{head or 'unknown'}{' +dirty' if dirty else ''}"


def machine() -> str:
    """CPU model, core count, thread setting, OS, and the versions of python, paddle, gymnasium."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import gymnasium
    import paddle

    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    return (
        f"{cpu}, {os.cpu_count()} cores (OMP_NUM_THREADS={threads}), {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, paddle {paddle.__version__}, "
        f"gymnasium {gymnasium.__version__}"
    )


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Render a GitHub markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
