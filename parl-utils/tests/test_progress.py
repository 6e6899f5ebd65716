from __future__ import annotations

import io
from pathlib import Path

from parl.utils import logger, progress_bar
from parl.utils.progress import LineProgress

import pytest
from tqdm import tqdm


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_gets_a_tqdm_bar() -> None:
    stream = Terminal()
    bar = progress_bar(100, "PPO", unit="step", stream=stream)
    assert isinstance(bar, tqdm)
    bar.update(50)
    bar.close()
    assert "PPO" in stream.getvalue() and "50/100" in stream.getvalue()


def test_pipe_gets_ten_plain_lines(tmp_path: Path) -> None:
    logger.set_dir(tmp_path)
    stream = io.StringIO()
    bar = progress_bar(1000, "DQN CartPole-v1", unit="step", stream=stream)
    assert isinstance(bar, LineProgress)
    for _ in range(250):
        bar.update(4)
        bar.set_postfix(eval_return="9.5")
    bar.close()
    bar.close()
    assert stream.getvalue() == ""  # nothing redrawn with carriage returns
    lines = [line for line in (tmp_path / "log.log").read_text().splitlines() if "DQN" in line]
    assert len(lines) == 10
    assert lines[0].endswith("DQN CartPole-v1: 100/1000 step (10%) eval_return=9.5")
    assert lines[-1].endswith("DQN CartPole-v1: 1000/1000 step (100%) eval_return=9.5")


def test_disabled_shows_nothing(tmp_path: Path) -> None:
    logger.set_dir(tmp_path)
    bar = progress_bar(10, "quiet", disable=True)
    bar.update(10)
    bar.close()
    assert "quiet" not in (tmp_path / "log.log").read_text()


def test_bad_total() -> None:
    with pytest.raises(ValueError, match="total must be an integer > 0, got 0"):
        progress_bar(0)
