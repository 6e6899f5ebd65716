"""PARL utilities: logger, metric summaries, replay memory, schedulers, RL math, rollouts.

PARL 2.x's helper modules keep their names: ``utils`` (``check_model_method``, …),
``machine_info``, ``np_utils``, ``path_utils`` and ``globvars``, re-exported here as in PARL.

Importing ``parl.utils`` never imports paddle; the parts that need gymnasium (the rollout
collector, ``evaluate``, the ``EvalTracker``, ``LegacyGymWrapper``) and the settings parser
(tyro) load on first access. PARL 2.x's environment
wrappers live in :mod:`parl.env`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes
from parl.utils import globvars, logger, machine_info, np_utils, path_utils, summary, utils
from parl.utils.csv_logger import CSVLogger
from parl.utils.globvars import GlobalConfig, global_config
from parl.utils.machine_info import (
    get_free_tcp_port,
    get_gpu_count,
    get_ip_address,
    get_port_from_range,
    is_gpu_available,
    is_port_available,
    is_xpu_available,
)
from parl.utils.np_utils import np_cross_entropy, np_softmax
from parl.utils.path_utils import format_uniform_path
from parl.utils.progress import progress_bar
from parl.utils.replay_memory import (
    DeviceReplayMemory,
    ReplayMemory,
    TransitionBatch,
    make_replay_memory,
)
from parl.utils.rl_utils import (
    bootstrap_truncated,
    calc_discount_sum_rewards,
    calc_gae,
    compute_gae,
)
from parl.utils.scheduler import LinearDecayScheduler, PiecewiseScheduler
from parl.utils.time_stat import TimeStat
from parl.utils.utils import (
    MAX_INT32,
    check_model_method,
    check_version_for_fluid,
    check_version_for_xpu,
    get_fluid_version,
    has_func,
    isnotebook,
    kill_process,
    to_byte,
    to_str,
)
from parl.utils.window_stat import WindowStat

if TYPE_CHECKING:
    from parl.env.compat_wrappers import LegacyGymWrapper
    from parl.utils.config import ConfigError, load_config, parse_args, save_config
    from parl.utils.evaluation import EvalResult, evaluate
    from parl.utils.rollout import (
        Episode,
        Rollout,
        RolloutCollector,
        Transition,
        make_vector_env,
    )
    from parl.utils.tracker import Callback, EvalTracker, RunResult

__all__ = [
    "MAX_INT32",
    "CSVLogger",
    "Callback",
    "ConfigError",
    "DeviceReplayMemory",
    "Episode",
    "EvalResult",
    "EvalTracker",
    "GlobalConfig",
    "LegacyGymWrapper",
    "LinearDecayScheduler",
    "PiecewiseScheduler",
    "ReplayMemory",
    "Rollout",
    "RolloutCollector",
    "RunResult",
    "TimeStat",
    "Transition",
    "TransitionBatch",
    "WindowStat",
    "bootstrap_truncated",
    "calc_discount_sum_rewards",
    "calc_gae",
    "check_model_method",
    "check_version_for_fluid",
    "check_version_for_xpu",
    "compute_gae",
    "evaluate",
    "format_uniform_path",
    "get_fluid_version",
    "get_free_tcp_port",
    "get_gpu_count",
    "get_ip_address",
    "get_port_from_range",
    "global_config",
    "globvars",
    "has_func",
    "is_gpu_available",
    "is_port_available",
    "is_xpu_available",
    "isnotebook",
    "kill_process",
    "load_config",
    "logger",
    "machine_info",
    "make_replay_memory",
    "make_vector_env",
    "np_cross_entropy",
    "np_softmax",
    "np_utils",
    "parse_args",
    "path_utils",
    "progress_bar",
    "save_config",
    "summary",
    "to_byte",
    "to_str",
    "utils",
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
    "Callback": "parl.utils.tracker",
    "EvalTracker": "parl.utils.tracker",
    "RunResult": "parl.utils.tracker",
    # tyro and yaml: only for scripts that parse their settings.
    "ConfigError": "parl.utils.config",
    "load_config": "parl.utils.config",
    "parse_args": "parl.utils.config",
    "save_config": "parl.utils.config",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
