"""PARL utilities: logger, metric summaries, replay memory, schedulers, RL math, stats, wrappers.

Importing ``parl.utils`` never imports paddle. The gymnasium wrappers load on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from parl.utils import logger, summary
from parl.utils.csv_logger import CSVLogger
from parl.utils.replay_memory import ReplayMemory
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
    from parl.utils.env_wrappers import ActionMappingWrapper, LegacyGymWrapper

__all__ = [
    "ActionMappingWrapper",
    "CSVLogger",
    "LegacyGymWrapper",
    "LinearDecayScheduler",
    "PiecewiseScheduler",
    "ReplayMemory",
    "TimeStat",
    "WindowStat",
    "bootstrap_truncated",
    "calc_discount_sum_rewards",
    "calc_gae",
    "compute_gae",
    "logger",
    "summary",
]

# gymnasium costs ~0.2 s to import; load the wrappers only when asked for.
_LAZY = {"ActionMappingWrapper", "LegacyGymWrapper"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module("parl.utils.env_wrappers"), name)
    raise AttributeError(f"module 'parl.utils' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)
