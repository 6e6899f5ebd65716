"""The ``parl`` logger with a compact coloured prefix and an optional per-run log directory.

Examples:
    >>> from parl.utils import logger
    >>> logger.set_dir("./train_log/cartpole")
    >>> logger.info("episode %d return %.1f", 3, 200.0)
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "CRITICAL",
    "DEBUG",
    "ERROR",
    "INFO",
    "WARNING",
    "add_stdout_handler",
    "auto_set_dir",
    "critical",
    "debug",
    "error",
    "exception",
    "get_dir",
    "info",
    "remove_handler",
    "setLevel",
    "set_dir",
    "set_level",
    "warn",
    "warning",
]

DEBUG = logging.DEBUG
INFO = logging.INFO
WARNING = logging.WARNING
ERROR = logging.ERROR
CRITICAL = logging.CRITICAL

LOG_FILE_NAME = "log.log"
_AUTO_DIR_ACTIONS = ("k", "d", "n")

_GREEN = "\x1b[32m"
_YELLOW = "\x1b[33m"
_RED = "\x1b[31m"
_BLUE = "\x1b[34m"
_RESET = "\x1b[0m"


class _Formatter(logging.Formatter):
    """``[MM-DD HH:MM:SS file:line]`` prefix; warnings and errors get a ``WRN``/``ERR`` tag."""

    def __init__(self, colour: bool) -> None:
        super().__init__(datefmt="%m-%d %H:%M:%S")
        self._colour = colour

    def _paint(self, text: str, colour: str) -> str:
        return f"{colour}{text}{_RESET}" if self._colour else text

    def format(self, record: logging.LogRecord) -> str:
        prefix = self._paint(
            f"[{self.formatTime(record, self.datefmt)} {record.filename}:{record.lineno}]", _GREEN
        )
        if record.levelno >= logging.ERROR:
            prefix += " " + self._paint("ERR", _RED)
        elif record.levelno >= logging.WARNING:
            prefix += " " + self._paint("WRN", _YELLOW)
        elif record.levelno <= logging.DEBUG:
            prefix += " " + self._paint("DBG", _BLUE)
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        return f"{prefix} {message}"


def _stream_wants_colour(stream: Any) -> bool:
    return "NO_COLOR" not in os.environ and bool(getattr(stream, "isatty", lambda: False)())


_logger = logging.getLogger("parl")
# PARL prints its own prefix; not propagating avoids a second copy through a configured root.
_logger.propagate = False
_logger.setLevel(logging.INFO)


def add_stdout_handler() -> logging.Handler:
    """Also print log lines to the current ``sys.stdout``; returns the handler added.

    PARL's remote jobs call this after redirecting ``sys.stdout``, so that log lines follow the
    redirection; :func:`remove_handler` takes the handler away again.
    """
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_Formatter(colour=_stream_wants_colour(sys.stdout)))
    _logger.addHandler(handler)
    return handler


def remove_handler(handler: logging.Handler) -> None:
    """Stop sending log lines to ``handler`` (one that :func:`add_stdout_handler` returned)."""
    _logger.removeHandler(handler)


_stdout_handler = add_stdout_handler()

_log_dir: str | None = None
_file_handler: logging.FileHandler | None = None


def _log(level: int, msg: object, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    # stacklevel + 1 so that file:line names the caller of logger.info, not this module.
    kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 2
    _logger.log(level, msg, *args, **kwargs)


def debug(msg: object, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at DEBUG level."""
    _log(DEBUG, msg, args, kwargs)


def info(msg: object, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at INFO level."""
    _log(INFO, msg, args, kwargs)


def warning(msg: object, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at WARNING level."""
    _log(WARNING, msg, args, kwargs)


warn = warning


def error(msg: object, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ERROR level."""
    _log(ERROR, msg, args, kwargs)


def critical(msg: object, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at CRITICAL level."""
    _log(CRITICAL, msg, args, kwargs)


def exception(msg: object, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ERROR level with the traceback of the exception being handled."""
    kwargs.setdefault("exc_info", True)
    _log(ERROR, msg, args, kwargs)


def set_level(level: int | str) -> None:
    """Set the threshold of the ``parl`` logger.

    Args:
        level: a level number (``logger.DEBUG``) or name (``"DEBUG"``, case-insensitive).

    Raises:
        ValueError: if ``level`` names no logging level.
    """
    if isinstance(level, str):
        number = logging.getLevelName(level.upper())
        if not isinstance(number, int):
            raise ValueError(
                f"unknown log level {level!r}; use one of DEBUG, INFO, WARNING, ERROR, CRITICAL"
            )
        level = number
    _logger.setLevel(level)


setLevel = set_level


def set_dir(dirname: str | os.PathLike[str]) -> None:
    """Use ``dirname`` as the run's log directory and copy all log lines to ``dirname/log.log``.

    The directory is created if needed; existing content is kept and ``log.log`` is appended to
    (PARL 2.x emptied the directory first). When files were already there, one line says so.

    Args:
        dirname: the log directory.
    """
    global _log_dir, _file_handler
    path = Path(dirname)
    path.mkdir(parents=True, exist_ok=True)
    had_files = any(path.iterdir())
    if _file_handler is not None:
        _logger.removeHandler(_file_handler)
        _file_handler.close()
    _file_handler = logging.FileHandler(path / LOG_FILE_NAME, encoding="utf-8")
    _file_handler.setFormatter(_Formatter(colour=False))
    _logger.addHandler(_file_handler)
    _log_dir = str(path)
    _logger.info("Argv: %s", " ".join(sys.argv), stacklevel=2)
    _logger.info("Log directory: %s", path, stacklevel=2)
    if had_files:
        _logger.info(
            "Log directory %s already holds files: they are kept (PARL 2.x emptied it) and "
            "log.log is appended to",
            path,
            stacklevel=2,
        )


def get_dir() -> str | None:
    """Return the directory set by :func:`set_dir` or :func:`auto_set_dir`, or None."""
    return _log_dir


def _script_name() -> str:
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return Path(main_file).stem if main_file else "interactive"


def auto_set_dir(action: str | None = None) -> str:
    """Set the log directory to ``./train_log/<script name>``.

    Args:
        action: what to do when that directory already has content: ``"k"`` keep it and append
            (the default, also for None), ``"d"`` delete it first, ``"n"`` use a new numbered
            directory ``<script name>-1``, ``-2``, … instead.

    Returns:
        The directory now in use.

    Raises:
        ValueError: if ``action`` is not one of ``"k"``, ``"d"``, ``"n"``, None.
    """
    action = "k" if action is None else action
    if action not in _AUTO_DIR_ACTIONS:
        raise ValueError(
            f"auto_set_dir(action={action!r}) is not supported; use 'k' (keep), 'd' (delete) "
            "or 'n' (new numbered directory)"
        )
    dirname = Path("train_log") / _script_name()
    if dirname.is_dir() and any(dirname.iterdir()):
        if action == "d":
            shutil.rmtree(dirname)
        elif action == "n":
            number = 1
            while (dirname.parent / f"{dirname.name}-{number}").exists():
                number += 1
            dirname = dirname.parent / f"{dirname.name}-{number}"
    set_dir(dirname)
    return str(dirname)
