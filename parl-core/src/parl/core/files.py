"""Atomic, owner-only file writes: the one way every PARL package writes a file.

A writer fills a temporary file beside the target, flushes it to disk and renames it over the
target, so a reader sees the old file or the new one, never half of one. Temporary files carry
their writer's pid in their name (``.<name>.<pid>.<random>.tmp``); a writer that was killed
leaves one behind, and the next write into that folder removes it. This module imports
neither paddle nor anything outside the standard library, so parl-remote uses it too.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["OWNER_ONLY", "atomic_write", "remove_orphaned_temporaries", "write_atomic"]

OWNER_ONLY = 0o600
_TEMPORARY = re.compile(r"^\..+\.(?P<pid>\d+)\.[^.]+\.tmp$")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: int = OWNER_ONLY) -> Iterator[IO[bytes]]:
    """Open a binary temporary file that replaces ``path`` when the block ends without error.

    Missing parent folders are created. On an exception the temporary file is removed and
    ``path`` is untouched.

    Args:
        path: the file to (re)write.
        mode: permission bits of the written file; owner-only by default.

    Examples:
        >>> import pathlib, tempfile
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "state.bin"
        >>> with atomic_write(target) as handle:
        ...     _ = handle.write(b"payload")
        >>> target.read_bytes(), oct(target.stat().st_mode & 0o777)
        (b'payload', '0o600')
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_orphaned_temporaries(target.parent)
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    _fsync_folder(target.parent)


def write_atomic(path: str | os.PathLike[str], data: bytes | str, mode: int = OWNER_ONLY) -> None:
    """Write ``data`` (text is UTF-8 encoded) to ``path`` atomically; see :func:`atomic_write`."""
    payload = data.encode() if isinstance(data, str) else data
    with atomic_write(path, mode) as handle:
        handle.write(payload)


def remove_orphaned_temporaries(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete temporary files in ``folder`` whose writer process no longer exists.

    Returns:
        The files removed.
    """
    removed = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            match = _TEMPORARY.match(entry.name)
            if match and not _process_exists(int(match["pid"])):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed


def _process_exists(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_folder(folder: Path) -> None:
    # The rename is durable only once the folder's entry is on disk.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
