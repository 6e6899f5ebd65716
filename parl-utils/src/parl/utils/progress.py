"""``progress_bar``: a tqdm bar on a terminal, a few plain log lines anywhere else.

A bar redrawn with carriage returns turns a CI log or a redirected file into one huge line of
noise; when the output is not a terminal the same calls print a line at every tenth of the way
instead.
"""

from __future__ import annotations

import sys
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


class LineProgress:
    """Logs ``desc: done/total unit (pct%) key=value ...`` at each tenth of ``total`` and at close.

    Args:
        total: the amount of work.
        desc: what is progressing, e.g. ``"PPO CartPole-v1"``.
        unit: the unit of ``total``.
        lines: how many progress lines to print over the run (besides the final one).
    """

    def __init__(self, total: int, desc: str = "", unit: str = "it", lines: int = 10) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.n: float = 0
        self._step = total / lines
        self._next = self._step
        self._postfix: dict[str, Any] = {}
        self._closed = False

    def update(self, n: float = 1) -> None:
        """Advance by ``n``; log a line when a tenth of ``total`` is crossed."""
        self.n += n
        if self.n >= self._next and self.n < self.total:
            while self._next <= self.n:
                self._next += self._step
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
        percent = 100.0 * self.n / self.total if self.total else 100.0
        extra = "".join(f" {key}={value}" for key, value in self._postfix.items())
        # stacklevel 3: the line names the caller of update()/close(), not this module.
        logger.info(
            "%s: %g/%g %s (%.0f%%)%s",
            *(self.desc, self.n, self.total, self.unit, percent, extra),
            stacklevel=3,
        )


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
