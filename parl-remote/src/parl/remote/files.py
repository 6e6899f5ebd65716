"""Collect the user's files that every job receives before it builds an actor.

By default the job gets the ``*.py`` files in the folder of the user's script and every Python
package below that folder (sub-folders with an ``__init__.py``, at any depth). ``distributed_files``
adds glob patterns, single files and whole folders (recursively, any file type), given relative to
the current directory (kept at the same relative path in the job) or absolute (placed under their
own name).
"""

from __future__ import annotations

import glob
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

__all__ = [
    "MAX_TOTAL_BYTES",
    "collect_files",
    "pack_files",
    "script_dir",
    "unpack_files",
    "write_files",
]

MAX_TOTAL_BYTES = 64 * 2**20
_SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".tox", ".nox"}


def script_dir() -> Path | None:
    """Folder of the running script, or None in an interactive session or under a test runner."""
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None)
    if not main_file:
        return None
    folder = Path(main_file).resolve().parent
    if any(part in {"site-packages", "dist-packages", "bin"} for part in folder.parts[-2:]):
        return None
    return folder


def _walk(folder: Path, python_packages_only: bool) -> Iterable[Path]:
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        root_path = Path(root)
        if python_packages_only:
            dirs[:] = [d for d in dirs if (root_path / d / "__init__.py").is_file()]
        for name in sorted(names):
            if python_packages_only and not name.endswith(".py"):
                continue
            yield root_path / name


def _default_files(folder: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(folder.glob("*.py")):
        found[path.name] = path
    for sub in sorted(folder.iterdir()):
        if sub.is_dir() and sub.name not in _SKIP_DIRS and (sub / "__init__.py").is_file():
            for path in _walk(sub, python_packages_only=True):
                found[path.relative_to(folder).as_posix()] = path
    return found


def _relative_name(path: Path, cwd: Path, given_absolute: bool, anchor: Path) -> str:
    if not given_absolute:
        try:
            return path.resolve().relative_to(cwd).as_posix()
        except ValueError:
            pass
    return path.resolve().relative_to(anchor.resolve().parent).as_posix()


def collect_files(
    distributed_files: Iterable[str] | None, base: Path | None = None
) -> dict[str, bytes]:
    """Read the files every job of this client receives.

    Args:
        distributed_files: Glob patterns, files or folders (see the module docstring).
        base: The default folder to ship Python files from (default: the script's folder).

    Returns:
        Mapping of the path inside the job's folder to the file's bytes.

    Raises:
        ValueError: A pattern matches nothing, or the files exceed ``MAX_TOTAL_BYTES``.
    """
    cwd = Path.cwd().resolve()
    chosen: dict[str, Path] = {}
    folder = base if base is not None else script_dir()
    if folder is not None and folder.is_dir():
        chosen.update(_default_files(folder))
    for pattern in distributed_files or []:
        if not isinstance(pattern, str):
            raise TypeError(
                f"distributed_files entries must be strings (paths or glob patterns), got "
                f"{pattern!r} of type {type(pattern).__name__}"
            )
        given_absolute = os.path.isabs(pattern)
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches:
            raise ValueError(
                f"distributed_files entry {pattern!r} matches no file or folder (looked from "
                f"{cwd}); give a path or glob relative to the current directory, or an absolute one"
            )
        for match in matches:
            path = Path(match)
            if path.is_dir():
                for file in _walk(path, python_packages_only=False):
                    chosen[_relative_name(file, cwd, given_absolute, path)] = file
            else:
                chosen[_relative_name(path, cwd, given_absolute, path)] = path
    files: dict[str, bytes] = {}
    total = 0
    for name, path in chosen.items():
        data = path.read_bytes()
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise ValueError(
                f"the distributed files exceed {MAX_TOTAL_BYTES // 2**20} MiB (at {name}); ship "
                "large data another way or narrow distributed_files"
            )
        files[name] = data
    return files


def unpack_files(listing: bytes, blob: bytes) -> list[tuple[str, bytes]]:
    """Split the shipped files: ``listing`` is a JSON list of ``[relative path, size]``."""
    try:
        entries = json.loads(listing or b"[]")
    except (ValueError, RecursionError):  # a deeply nested list must not end the job
        raise ValueError("the file list is not a flat JSON list") from None
    if not isinstance(entries, list):
        raise ValueError("the file list must be a JSON list")
    files, offset = [], 0
    for entry in entries:
        if (
            not isinstance(entry, list)
            or len(entry) != 2
            or not isinstance(entry[0], str)
            or isinstance(entry[1], bool)
            or not isinstance(entry[1], int)
            or entry[1] < 0
        ):
            raise ValueError("each shipped file is [relative path, size]")
        path = PurePosixPath(entry[0])
        if path.is_absolute() or ".." in path.parts or not path.parts:
            raise ValueError(f"refusing to write a shipped file outside the job: {entry[0]!r}")
        files.append((entry[0], blob[offset : offset + entry[1]]))
        offset += entry[1]
    if offset != len(blob):
        raise ValueError("the shipped files' sizes do not add up to the data sent")
    return files


def pack_files(files: dict[str, bytes]) -> tuple[bytes, bytes]:
    """The two INIT frames that carry ``files`` (see :func:`unpack_files`)."""
    listing = json.dumps([[name, len(data)] for name, data in files.items()]).encode()
    return listing, b"".join(files.values())


def write_files(files: Iterable[tuple[str, bytes]], root: Path) -> None:
    """Write shipped files (checked relative paths, see :func:`unpack_files`) under ``root``,
    owner-only."""
    for relative, content in files:
        target = root / relative
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
