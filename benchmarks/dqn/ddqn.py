"""DDQN benchmark: the DQN benchmark (same configs and runner interface) with Double DQN."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location(
    "benchmarks_dqn_dqn", Path(__file__).with_name("dqn.py")
)
assert _spec is not None and _spec.loader is not None
_dqn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_dqn)

ALGO = "DDQN"
CONFIGS: dict[str, dict[str, Any]] = _dqn.CONFIGS


def run(env_id: str, seed: int) -> dict[str, Any]:
    """Train DDQN on ``env_id`` with ``seed``; see ``benchmarks/dqn/dqn.py::run``."""
    return _dqn.run(env_id, seed, ALGO)
