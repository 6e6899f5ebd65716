"""Value-based algorithms for PARL: DQN, Double DQN, a dueling Q-network helper and an agent.

Each class is written once and runs on paddle or torch: an algorithm takes the framework of
its model, and ``QNetwork(4, 2)`` builds one for the selected framework
(:func:`parl.get_backend`; ``backend="torch"`` picks). Users normally reach the algorithms
through the registry::

    import parl
    DQN = parl.algorithms.get("DQN")  # the same class for either framework
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from parl_algos_dqn.agent import DQNAgent
    from parl_algos_dqn.ddqn import DDQN
    from parl_algos_dqn.dqn import DQN, DQNConfig
    from parl_algos_dqn.models import DuelingHead, DuelingQNetwork, QNetwork

__all__ = ["DDQN", "DQN", "DQNAgent", "DQNConfig", "DuelingHead", "DuelingQNetwork", "QNetwork"]

_LAZY = {
    "DQNAgent": "parl_algos_dqn.agent",
    "DDQN": "parl_algos_dqn.ddqn",
    "DQN": "parl_algos_dqn.dqn",
    "DQNConfig": "parl_algos_dqn.dqn",
    "DuelingHead": "parl_algos_dqn.models",
    "DuelingQNetwork": "parl_algos_dqn.models",
    "QNetwork": "parl_algos_dqn.models",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
