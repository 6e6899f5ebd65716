from __future__ import annotations

import io
from pathlib import Path

from parl.utils import logger, progress, progress_bar
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


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The progress lines' clock, set by the test: ``clock[0]`` seconds."""
    now = [0.0]
    monkeypatch.setattr(progress, "_clock", lambda: now[0])
    return now


def progress_lines(logdir: Path, label: str) -> list[str]:
    lines = (logdir / "log.log").read_text().splitlines()
    return [line.split("] ", 1)[-1] for line in lines if label in line]


def test_pipe_gets_a_line_each_tenth_with_rate_and_time_left(tmp_path: Path, clock) -> None:
    logger.set_dir(tmp_path)
    stream = io.StringIO()
    bar = progress_bar(1000, "DQN CartPole-v1", unit="step", stream=stream)
    assert isinstance(bar, LineProgress)
    for _ in range(250):
        clock[0] += 0.05
        bar.update(4)
        bar.set_postfix(eval_return="9.5")
    bar.close()
    bar.close()
    assert stream.getvalue() == ""  # nothing redrawn with carriage returns
    lines = progress_lines(tmp_path, "DQN")
    assert len(lines) == 10
    assert (
        lines[0]
        == "DQN CartPole-v1:  10% 100/1000 step [00:01<00:11, 80.00step/s, eval_return=9.5]"
    )
    assert (
        lines[-1]
        == "DQN CartPole-v1: 100% 1000/1000 step [00:12<00:00, 80.00step/s, eval_return=9.5]"
    )


def test_a_slow_run_still_logs_every_interval(tmp_path: Path, clock) -> None:
    logger.set_dir(tmp_path)
    bar = progress_bar(1000, "CQL Pendulum-v1", unit="gradient step", stream=io.StringIO())
    for _ in range(10):  # 1% of the run, 70 s
        clock[0] += 7.0
        bar.update(1)
    lines = progress_lines(tmp_path, "CQL")
    assert len(lines) == 3  # at 21, 42 and 63 s: never 20 s without a line
    assert lines[0].endswith(
        "CQL Pendulum-v1:   0% 3/1000 gradient step [00:21<1:56:19,  7.00s/gradient step]"
    )


def test_disabled_shows_nothing(tmp_path: Path) -> None:
    logger.set_dir(tmp_path)
    bar = progress_bar(10, "quiet", disable=True)
    bar.update(10)
    bar.close()
    assert "quiet" not in (tmp_path / "log.log").read_text()


def test_bad_total() -> None:
    with pytest.raises(ValueError, match="total must be an integer > 0, got 0"):
        progress_bar(0)


def test_a_run_that_overshoots_its_total_ends_at_100_percent(tmp_path: Path, clock) -> None:
    logger.set_dir(tmp_path)
    bar = progress_bar(1000, "IMPALA CartPole-v1", unit="step", stream=io.StringIO())
    clock[0] = 10.0
    bar.update(1064)  # the last batch of rollouts goes past the budget
    bar.close()
    assert progress_lines(tmp_path, "IMPALA") == [
        "IMPALA CartPole-v1: 100% 1064/1064 step [00:10<00:00, 106.40step/s]"
    ]
