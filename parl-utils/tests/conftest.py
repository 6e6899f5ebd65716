"""Shared fixtures: every test gets fresh plugin and summary state and runs in a temp dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from parl.plugins import reset_plugin_manager
from parl.utils import summary

import pytest


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PARL_DISABLED_PLUGINS", raising=False)
    monkeypatch.delenv("PARL_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    reset_plugin_manager()
    monkeypatch.setattr(summary, "_logdir", None)
    yield
    summary.close()
    reset_plugin_manager()
