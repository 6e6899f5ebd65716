"""Value-based algorithms for PARL: DQN, Double DQN, a dueling Q-network helper and an agent.

Users normally reach the algorithms through the registry::

    import parl
    DQN = parl.algorithms.get("DQN")  # the selected backend's (parl.get_backend())

The paddle classes are here, the torch ones in :mod:`parl_algos_dqn.torch` (same names, same
:class:`DQNConfig`); both load on first use, so either framework alone is enough.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

from parl_algos_dqn.config import DQNConfig

if TYPE_CHECKING:
    from parl_algos_dqn.agent import DQNAgent
    from parl_algos_dqn.ddqn import DDQN
    from parl_algos_dqn.dqn import DQN
    from parl_algos_dqn.models import DuelingHead, DuelingQNetwork, QNetwork

__all__ = ["DDQN", "DQN", "DQNAgent", "DQNConfig", "DuelingHead", "DuelingQNetwork", "QNetwork"]

_LAZY = {
    "DQNAgent": "parl_algos_dqn.agent",
    "DDQN": "parl_algos_dqn.ddqn",
    "DQN": "parl_algos_dqn.dqn",
    "DuelingHead": "parl_algos_dqn.models",
    "DuelingQNetwork": "parl_algos_dqn.models",
    "QNetwork": "parl_algos_dqn.models",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
