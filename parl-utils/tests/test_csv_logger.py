from __future__ import annotations

import csv
from pathlib import Path

from parl.utils import CSVLogger

import pytest


def test_rows_follow_first_header(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "result.csv"
    csv_logger = CSVLogger(path)
    csv_logger.log_dict({"step": 1, "return": 10.5})
    csv_logger.log_dict({"return": 11.0, "step": 2})
    csv_logger.flush()
    with path.open(newline="") as handle:
        assert list(csv.reader(handle)) == [["step", "return"], ["1", "10.5"], ["2", "11.0"]]
    csv_logger.close()
    csv_logger.close()


def test_changed_keys_raise_and_name_them(tmp_path: Path) -> None:
    with CSVLogger(tmp_path / "r.csv") as csv_logger:
        csv_logger.log_dict({"step": 1, "return": 1.0})
        with pytest.raises(ValueError, match=r"missing \['return'\] and has unexpected \['loss'\]"):
            csv_logger.log_dict({"step": 2, "loss": 0.1})


def test_log_after_close_raises(tmp_path: Path) -> None:
    csv_logger = CSVLogger(tmp_path / "r.csv")
    csv_logger.close()
    with pytest.raises(ValueError, match="is closed"):
        csv_logger.log_dict({"a": 1})
