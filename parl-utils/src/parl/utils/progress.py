"""``progress_bar``: a tqdm bar on a terminal, tqdm's figures as plain log lines anywhere else.

A bar redrawn with carriage returns turns a CI log or a redirected file into one huge line of
noise; when the output is not a terminal the same calls log a line instead, with what the bar
shows (done/total, rate, elapsed and remaining time), at every tenth of the way and at least
every ``interval`` seconds.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol, TextIO

from parl.utils import logger
from parl.utils._validation import positive_int

from tqdm import tqdm

__all__ = ["LineProgress", "Progress", "progress_bar"]


class Progress(Protocol):
    """What the examples call on a progress display (a subset of tqdm's API)."""

    def update(self, n: float = 1) -> Any: ...

    def set_postfix(self, **kwargs: Any) -> Any: ...

    def close(self) -> Any: ...


# tqdm's own fields, without the bar's glyphs: "PPO CartPole-v1:  40% 20000/50000 step
# [00:10<00:15, 2000.00step/s, eval_return=500.0]".
_LINE_FORMAT = (
    "{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} {unit} "
    "[{elapsed}<{remaining}, {rate_fmt}{postfix}]"
)
_clock = time.monotonic


class LineProgress:
    """Logs what a tqdm bar shows (done/total, rate, elapsed and remaining time, the postfix)
    as one line at each tenth of ``total``, at least every ``interval`` seconds, and at close.

    Args:
        total: the amount of work.
        desc: what is progressing, e.g. ``"PPO CartPole-v1"``.
        unit: the unit of ``total``.
        lines: how many lines mark the tenths (or other fractions) of the run.
        interval: the most seconds between two lines while work goes on.
    """

    def __init__(
        self, total: int, desc: str = "", unit: str = "it", lines: int = 10, interval: float = 20.0
    ) -> None:
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        self.n: float = 0
        self._step = total / lines
        self._next = self._step
        self._postfix: dict[str, Any] = {}
        self._closed = False
        self._started = self._logged = _clock()

    def update(self, n: float = 1) -> None:
        """Advance by ``n``; log a line when a tenth of ``total`` is crossed or ``interval``
        seconds have passed since the last line."""
        self.n += n
        if self.n >= self.total:
            return
        crossed = self.n >= self._next
        while self._next <= self.n:
            self._next += self._step
        if crossed or _clock() - self._logged >= self.interval:
            self._log()

    def set_postfix(self, **kwargs: Any) -> None:
        """Show ``key=value`` pairs in the following lines."""
        self._postfix = kwargs

    def close(self) -> None:
        """Log the final line (once)."""
        if not self._closed:
            self._closed = True
            self._log()

    def _log(self) -> None:
        self._logged = _clock()
        postfix = ", ".join(f"{key}={value}" for key, value in self._postfix.items())
        line = tqdm.format_meter(
            self.n,
            max(self.total, self.n),  # a run may overshoot its budget by a last batch
            self._logged - self._started,
            prefix=self.desc,
            unit=self.unit,
            postfix=postfix or None,
            bar_format=_LINE_FORMAT,
        )
        # stacklevel 3: the line names the caller of update()/close(), not this module.
        logger.info("%s", line, stacklevel=3)


class _Silent:
    def update(self, n: float = 1) -> None:
        pass

    def set_postfix(self, **kwargs: Any) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(
    total: int,
    desc: str = "",
    unit: str = "it",
    *,
    disable: bool = False,
    stream: Any = None,
) -> Progress:
    """A progress display: tqdm when ``stream`` is a terminal, :class:`LineProgress` otherwise.

    Args:
        total: the amount of work (e.g. environment steps).
        desc: the label.
        unit: the unit of ``total``.
        disable: show nothing at all.
        stream: where the bar goes; ``sys.stderr`` by default (tqdm's choice).

    Examples:
        >>> bar = progress_bar(50_000, "DQN CartPole-v1", unit="step")
        >>> bar.update(4)
        >>> bar.set_postfix(eval_return="500.0")
        >>> bar.close()
    """
    total = positive_int("total", total)
    if disable:
        return _Silent()
    out: TextIO = sys.stderr if stream is None else stream
    if getattr(out, "isatty", lambda: False)():
        return tqdm(total=total, desc=desc, unit=unit, file=out, dynamic_ncols=True)
    return LineProgress(total, desc, unit)
