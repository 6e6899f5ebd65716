"""Actor logs: a bounded tail, size-capped rotation and pruning of old logs.

A job writes its stdout and stderr straight into ``<job_id>.log`` (opened for appending), so
rotation copies the newest part into ``<job_id>.log.1`` and truncates the log in place; the job
keeps appending at the new end. Everything here reads at most a bounded number of bytes, so a
huge log never makes a worker or ``xparl logs`` hold it in memory.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from parl.core.files import write_atomic

__all__ = ["MAX_TAIL_BYTES", "prune", "rotate_if_large", "tail"]

MAX_TAIL_BYTES = 2**20
_BLOCK = 64 * 2**10


def tail(path: Path, lines: int = 0, max_bytes: int = MAX_TAIL_BYTES) -> tuple[str, bool]:
    """The last ``lines`` lines of an actor's log (0: as many as fit in ``max_bytes``), reading
    on into its rotated part ``<name>.1`` when the log itself holds fewer.

    Returns:
        The text and whether older text was left out because of ``max_bytes``.
    """
    kept, cut = _tail_lines(path, lines, max_bytes)
    older = path.with_name(path.name + ".1")
    short = len(kept) < lines if lines else not cut
    if short and older.is_file():
        room = max_bytes - sum(len(line) for line in kept)
        more, cut = _tail_lines(older, lines - len(kept) if lines else 0, room)
        kept = more + kept
    return b"".join(kept).decode("utf-8", "replace"), cut


def _tail_lines(path: Path, lines: int, max_bytes: int) -> tuple[list[bytes], bool]:
    chunks: list[bytes] = []
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        start = max(0, end - max(0, max_bytes))
        position, newlines = end, 0
        while position > start and not (lines and newlines > lines):
            step = min(_BLOCK, position - start)
            position -= step
            handle.seek(position)
            chunks.append(handle.read(step))
            newlines += chunks[-1].count(b"\n")
    kept = b"".join(reversed(chunks)).splitlines(keepends=True)
    if lines and len(kept) >= lines:
        return kept[-lines:], False
    cut = position > 0
    if cut and kept:
        kept = kept[1:]  # the first line is only partly there
    return kept, cut


def rotate_if_large(path: Path, max_bytes: int) -> bool:
    """If ``path`` exceeds ``max_bytes``, keep its newest ``max_bytes // 2`` bytes in
    ``<name>.1`` and empty it; return whether it rotated."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size <= max_bytes:
        return False
    keep = max(1, max_bytes // 2)
    with open(path, "rb") as handle:
        handle.seek(max(0, size - keep))
        newest = handle.read(keep)
    write_atomic(path.with_name(path.name + ".1"), newest)
    os.truncate(path, 0)
    return True


def prune(folder: Path, keep: int, live: set[str]) -> list[Path]:
    """Delete the logs of finished jobs in ``folder`` beyond the ``keep`` newest.

    Args:
        folder: A worker's log folder.
        keep: How many finished jobs' logs to keep.
        live: Ids of running jobs, whose logs are never deleted.
    """
    finished = []
    for log in folder.glob("*.log"):
        if log.stem in live:
            continue
        with contextlib.suppress(FileNotFoundError):
            finished.append((log.stat().st_mtime, log))
    finished.sort(reverse=True)
    removed = []
    for _, log in finished[keep:]:
        for path in (log, log.with_name(log.name + ".1")):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed
