"""PARL utilities: logger, metric summaries, replay memory, schedulers, RL math, rollouts.

Importing ``parl.utils`` never imports paddle; the parts that need gymnasium (the rollout
collector, ``evaluate``, ``LegacyGymWrapper``) load on first access. PARL 2.x's environment
wrappers live in :mod:`parl.env`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from parl.utils import logger, summary
from parl.utils.csv_logger import CSVLogger
from parl.utils.progress import progress_bar
from parl.utils.replay_memory import ReplayMemory, TransitionBatch
from parl.utils.rl_utils import (
    bootstrap_truncated,
    calc_discount_sum_rewards,
    calc_gae,
    compute_gae,
)
from parl.utils.scheduler import LinearDecayScheduler, PiecewiseScheduler
from parl.utils.time_stat import TimeStat
from parl.utils.window_stat import WindowStat

if TYPE_CHECKING:
    from parl.env.compat_wrappers import LegacyGymWrapper
    from parl.utils.evaluation import EvalResult, evaluate
    from parl.utils.rollout import (
        Episode,
        Rollout,
        RolloutCollector,
        Transition,
        make_vector_env,
    )

__all__ = [
    "CSVLogger",
    "Episode",
    "EvalResult",
    "LegacyGymWrapper",
    "LinearDecayScheduler",
    "PiecewiseScheduler",
    "ReplayMemory",
    "Rollout",
    "RolloutCollector",
    "TimeStat",
    "Transition",
    "TransitionBatch",
    "WindowStat",
    "bootstrap_truncated",
    "calc_discount_sum_rewards",
    "calc_gae",
    "compute_gae",
    "evaluate",
    "logger",
    "make_vector_env",
    "progress_bar",
    "summary",
]

# gymnasium costs ~0.2 s to import: these load on first access. name -> module
_LAZY = {
    "LegacyGymWrapper": "parl.env.compat_wrappers",
    "Episode": "parl.utils.rollout",
    "Rollout": "parl.utils.rollout",
    "RolloutCollector": "parl.utils.rollout",
    "Transition": "parl.utils.rollout",
    "make_vector_env": "parl.utils.rollout",
    "EvalResult": "parl.utils.evaluation",
    "evaluate": "parl.utils.evaluation",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'parl.utils' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
