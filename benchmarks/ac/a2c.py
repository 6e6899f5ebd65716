"""Benchmark of A2C with remote samplers on CartPole-v1 (first eval >= 475 by 300k steps).

``nox -s bench -- A2C CartPole-v1`` runs seeds 0-2 of examples/A2C/train.py on an embedded
xparl cluster and writes ``benchmarks/ac/results/A2C-CartPole-v1.{json,md,png}``; a run
passes when an evaluation reaches 475 within 300k env steps and the final one is >= 450.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _offpolicy
from _report import commit, load_example

__all__ = ["CONFIGS", "report", "run"]

_example = load_example("A2C")

CONFIGS: dict[str, dict[str, Any]] = {
    "CartPole-v1": {
        "total_steps": 300_000,
        "num_samplers": 2,
        "envs_per_sampler": 4,
        "num_steps": 16,
        # The example's defaults, spelled out: policy and value on separate trunks (on a shared
        # one the value loss drove the features), Adam at 2e-3 decayed linearly to 0.
        "shared_trunk": False,
        "lr": 2e-3,
        "eval_interval": 10_000,
        "eval_episodes": 10,
        "target_return": 475.0,
    },
}


def run(env_id: str, seed: int) -> dict[str, Any]:
    """One seed of A2C on ``env_id`` (an embedded cluster with one CPU per sampler)."""
    code = commit()  # the code that trains, not the tree when the run ends
    result = _example.train(env_id=env_id, seed=seed, progress=False, **CONFIGS[env_id])
    result["passed"] = result["steps_to_target"] is not None and result["final_eval_return"] >= 450
    result["commit"] = code
    return result


def report(env_id: str, seeds: list[int], results: list[dict[str, Any]]) -> Path:
    """The JSON, markdown and PNG of the runs."""
    return _offpolicy.report("A2C", env_id, seeds, results, CONFIGS[env_id])
