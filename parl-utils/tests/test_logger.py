from __future__ import annotations

import sys
from pathlib import Path

from parl.utils import logger

import pytest


@pytest.fixture
def main_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sys.modules["__main__"], "__file__", "/somewhere/train_dqn.py", raising=False
    )


def test_set_dir_writes_log_file_with_caller_location(tmp_path: Path) -> None:
    logger.set_dir(tmp_path / "run")
    logger.info("hello %s", "world")
    logger.warning("careful")
    text = (tmp_path / "run" / "log.log").read_text()
    assert logger.get_dir() == str(tmp_path / "run")
    assert "hello world" in text
    assert "test_logger.py:" in text
    assert "WRN careful" in text
    assert "\x1b[" not in text


def test_set_dir_keeps_existing_content(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.bin").write_bytes(b"x")
    logger.set_dir(run)
    logger.info("first")
    logger.set_dir(run)
    logger.info("second")
    assert (run / "checkpoint.bin").exists()
    text = (run / "log.log").read_text()
    assert "first" in text and "second" in text


def test_exception_logs_traceback(tmp_path: Path) -> None:
    logger.set_dir(tmp_path)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.exception("failed")
    text = (tmp_path / "log.log").read_text()
    assert "ERR failed" in text and "RuntimeError: boom" in text


def test_set_level(tmp_path: Path) -> None:
    logger.set_dir(tmp_path)
    try:
        logger.set_level("warning")
        logger.info("hidden")
        logger.setLevel(logger.DEBUG)
        logger.debug("shown")
    finally:
        logger.set_level(logger.INFO)
    text = (tmp_path / "log.log").read_text()
    assert "hidden" not in text and "DBG shown" in text


def test_set_level_rejects_unknown_name() -> None:
    with pytest.raises(ValueError, match=r"'LOUD'.*DEBUG, INFO"):
        logger.set_level("LOUD")


@pytest.mark.usefixtures("main_script")
def test_auto_set_dir_keep_delete_new(tmp_path: Path) -> None:
    default = tmp_path / "train_log" / "train_dqn"
    assert logger.auto_set_dir() == str(Path("train_log") / "train_dqn")
    (default / "old.txt").write_text("x")
    logger.auto_set_dir("k")
    assert (default / "old.txt").exists()
    assert logger.auto_set_dir("n") == str(Path("train_log") / "train_dqn-1")
    assert logger.auto_set_dir("n") == str(Path("train_log") / "train_dqn-2")
    logger.auto_set_dir("d")
    assert not (default / "old.txt").exists()
    assert (default / "log.log").exists()


def test_auto_set_dir_rejects_unknown_action() -> None:
    with pytest.raises(ValueError, match=r"'q'.*'k' \(keep\)"):
        logger.auto_set_dir("q")
