"""Atomic, owner-only writes and the clean-up of temporaries left by killed writers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from parl.core.files import atomic_write, remove_orphaned_temporaries, write_atomic

import pytest


def test_write_replaces_the_file_owner_only(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "record.json"
    write_atomic(target, "first")
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["record.json"]


def test_error_inside_the_block_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "state.bin"
    write_atomic(target, b"old")
    with pytest.raises(RuntimeError), atomic_write(target) as handle:
        handle.write(b"half of the new")
        raise RuntimeError("writer failed")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.bin"]


def test_the_next_write_removes_temporaries_of_killed_writers(tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    writer = textwrap.dedent(
        f"""
        import os, sys, time
        from parl.core.files import atomic_write
        with atomic_write({str(target)!r}) as handle:
            handle.write(b"x" * 1024)
            handle.flush()
            print("writing", flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
        orphans = list(tmp_path.glob(".big.bin.*.tmp"))
        assert len(orphans) == 1
        assert remove_orphaned_temporaries(tmp_path) == []  # its writer still runs
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    write_atomic(tmp_path / "other.bin", b"y")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.bin"]


def test_temporaries_of_live_writers_and_other_files_stay(tmp_path: Path) -> None:
    mine = tmp_path / f".a.bin.{os.getpid()}.abc.tmp"
    unrelated = tmp_path / ".hidden.tmp"
    mine.write_bytes(b"")
    unrelated.write_bytes(b"")
    assert remove_orphaned_temporaries(tmp_path) == []
    assert mine.exists() and unrelated.exists()
