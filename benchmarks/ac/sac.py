"""Benchmark of SAC: Pendulum-v1 (greedy return >= -200 within 10k steps), HalfCheetah-v5.

``nox -s bench -- SAC Pendulum-v1`` runs seeds 0-2 through benchmarks/run.py, which calls
:func:`run` per seed and then :func:`report` (see ``_offpolicy.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _offpolicy
from _offpolicy import CONFIGS

__all__ = ["CONFIGS", "report", "run"]


def run(env_id: str, seed: int) -> dict[str, Any]:
    """One seed of SAC on ``env_id``."""
    return _offpolicy.run("SAC", env_id, seed)


def report(env_id: str, seeds: list[int], results: list[dict[str, Any]]) -> Path:
    """The JSON, markdown and PNG of the runs."""
    return _offpolicy.report("SAC", env_id, seeds, results)
