"""Value-based algorithms for PARL: DQN, Double DQN, a dueling Q-network helper and an agent.

Users normally reach the algorithms through the registry::

    import parl
    DQN = parl.algorithms.get("DQN")
"""

from parl_algos_dqn.agent import DQNAgent
from parl_algos_dqn.ddqn import DDQN
from parl_algos_dqn.dqn import DQN, DQNConfig
from parl_algos_dqn.models import DuelingHead, DuelingQNetwork, QNetwork

__all__ = ["DDQN", "DQN", "DQNAgent", "DQNConfig", "DuelingHead", "DuelingQNetwork", "QNetwork"]
