"""Where a page's blocks run: a scratch directory that mirrors the repository.

:class:`PageRun` is sybil's ``setup``/``teardown`` for each document: it makes a
:class:`Workspace`, runs the page there with ``XPARL_HOME`` inside it and the directory on
``sys.path``, and afterwards stops what the page started and restores the process.
"""

from __future__ import annotations

import builtins
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def tracked_entries(root: Path) -> list[str]:
    """The top-level names git tracks in ``root`` (all visible entries if it is no checkout).

    Untracked outputs such as ``train_log/`` or a virtual environment stay out of the mirror.
    """
    if not (
        root / ".git"
    ).exists():  # a checkout's root has .git (a folder, or a file in worktrees)
        return sorted(e.name for e in root.iterdir() if not e.name.startswith("."))
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True
    )
    return sorted({path.split("/", 1)[0] for path in listing.stdout.split("\0") if path})


@dataclass
class Workspace:
    """A scratch directory mirroring the repository's top-level entries (as symlinks).

    Blocks run with it as their working directory and with ``XPARL_HOME`` inside it, so that
    ``python examples/...`` finds the examples, new files a page writes vanish with it, and an
    xparl cluster a page starts is recorded (and stopped) here only. The repository's entries
    are links to the checkout: a page writes next to them, never into them.
    """

    root: Path
    path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="parl-docs-"))
        for name in tracked_entries(self.root):
            (self.path / name).symlink_to(self.root / name)

    @property
    def env(self) -> dict[str, str]:
        """Variables set while a page runs (the interpreter's bin first on PATH)."""
        bin_dir = str(Path(sys.executable).parent)
        return {
            "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
            "XPARL_HOME": str(self.path / ".parl_data"),
            "MPLBACKEND": "Agg",
            "PYTHONHASHSEED": "0",
        }

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


@dataclass
class PageRun:
    """Set up and tear down the workspace around each document (sybil ``setup``/``teardown``)."""

    root: Path
    _saved: tuple[Workspace, str, dict[str, str], list[str]] | None = None

    def setup(self, namespace: dict[str, Any]) -> None:
        workspace = Workspace(self.root)
        self._saved = (workspace, os.getcwd(), dict(os.environ), list(sys.path))
        os.environ.update(workspace.env)
        os.chdir(workspace.path)
        # As for a script in that folder: modules a page writes there are importable.
        sys.path.insert(0, str(workspace.path))

    def teardown(self, namespace: dict[str, Any]) -> None:
        assert self._saved is not None, "teardown without setup"
        workspace, cwd, environ, path = self._saved
        self._saved = None
        try:
            _stop_what_the_page_started(workspace)
        finally:
            sys.path[:] = path
            # Finders cached for the page's (relative) path entries point into its workspace.
            sys.path_importer_cache.clear()
            _forget_modules_under(workspace.path)
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(environ)
            # A ``>>>`` example's value is left in ``builtins._`` (doctest's display hook), where
            # the next page would find it: a tuple holding a list there breaks importing tyro.
            builtins.__dict__.pop("_", None)
            workspace.remove()


def _forget_modules_under(folder: Path) -> None:
    """Drop modules imported from ``folder``, so that the next page imports its own."""
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).is_relative_to(folder):
            del sys.modules[name]


def _stop_what_the_page_started(workspace: Workspace) -> None:
    """Stop an embedded cluster, xparl clusters recorded in the workspace, open metric sinks."""
    if "parl.remote" in sys.modules:
        sys.modules["parl.remote"].disconnect()
    if "parl.utils.summary" in sys.modules:
        sys.modules["parl.utils.summary"].close()
    if (workspace.path / ".parl_data" / "clusters").exists():
        subprocess.run(["xparl", "stop"], env=os.environ.copy(), timeout=60, check=False)
