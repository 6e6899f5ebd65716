"""CSVLogger: one CSV row per call of :meth:`CSVLogger.log_dict` (PARL's API)."""

from __future__ import annotations

import csv
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["CSVLogger"]


class CSVLogger:
    """Write dicts with a fixed set of keys as rows of a CSV file.

    The header is taken from the first dict; every later dict must have the same keys. The file
    is truncated when the logger is created. Thread-safe.

    Args:
        output_file: the CSV file; parent directories are created.

    Examples:
        >>> with CSVLogger("train_log/result.csv") as csv_logger:
        ...     csv_logger.log_dict({"step": 1, "return": 10.0})
    """

    def __init__(self, output_file: str | os.PathLike[str]) -> None:
        path = Path(output_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.output_file = path
        self._file = path.open("w", newline="", encoding="utf-8")
        self._writer: csv.DictWriter[str] | None = None
        self._lock = threading.Lock()

    def log_dict(self, result: Mapping[str, Any]) -> None:
        """Append ``result`` as a row.

        Raises:
            ValueError: if the keys differ from those of the first call, or the logger is closed.
        """
        with self._lock:
            if self._file.closed:
                raise ValueError(f"CSVLogger for {self.output_file} is closed; create a new one")
            if self._writer is None:
                self._writer = csv.DictWriter(self._file, fieldnames=list(result))
                self._writer.writeheader()
            expected = list(self._writer.fieldnames)
            if set(result) != set(expected):
                missing = sorted(set(expected) - set(result))
                extra = sorted(set(result) - set(expected))
                raise ValueError(
                    f"CSVLogger({str(self.output_file)!r}) has header {expected}; this dict is "
                    f"missing {missing} and has unexpected {extra}. Log the same keys every time "
                    "(or use parl.utils.summary, whose CSV sink accepts new keys)"
                )
            self._writer.writerow(result)

    def flush(self) -> None:
        """Write buffered rows to the file."""
        with self._lock:
            if not self._file.closed:
                self._file.flush()

    def close(self) -> None:
        """Flush and close the file; closing twice is harmless."""
        with self._lock:
            self._file.close()

    def __enter__(self) -> CSVLogger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
