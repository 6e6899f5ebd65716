"""Shared fixtures: tiny paddle models and fake installed distributions."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import parl
from parl.algorithms import refresh
from parl.plugins import reset_plugin_manager

import pytest


@pytest.fixture
def tiny_model_cls() -> type:
    import paddle

    class TinyModel(parl.Model):
        def __init__(self, obs_dim: int = 3, act_dim: int = 2) -> None:
            super().__init__()
            self.fc1 = paddle.nn.Linear(obs_dim, 8)
            self.fc2 = paddle.nn.Linear(8, act_dim)

        def forward(self, obs):
            return self.fc2(paddle.tanh(self.fc1(obs)))

    return TinyModel


FakeDist = Callable[..., Path]


@pytest.fixture
def fake_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDist]:
    """Install fake distributions (dist-info metadata + modules) on sys.path for one test."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(
        name: str,
        entry_points: dict[str, dict[str, str]],
        modules: dict[str, str] | None = None,
        version: str = "1.0",
    ) -> Path:
        root = tmp_path / name
        root.mkdir()
        sys.path.insert(0, str(root))
        info = root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = []
        for group, eps in entry_points.items():
            lines.append(f"[{group}]")
            lines += [f"{key} = {value}" for key, value in eps.items()]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        for module, source in (modules or {}).items():
            (root / f"{module}.py").write_text(textwrap.dedent(source))
        refresh()
        reset_plugin_manager()
        return root

    yield make
    sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]
    refresh()
    reset_plugin_manager()
