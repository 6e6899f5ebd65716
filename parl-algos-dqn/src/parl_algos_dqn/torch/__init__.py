"""DQN and Double DQN on torch: the same names, config and agent as the paddle classes.

``parl.algorithms.get("DQN", backend="torch")`` (or ``PARL_BACKEND=torch``) reaches them
through the registry; ``DQNAgent(..., device="cuda")`` trains on a GPU.
"""

from parl_algos_dqn.config import DQNConfig
from parl_algos_dqn.torch.agent import DQNAgent
from parl_algos_dqn.torch.ddqn import DDQN
from parl_algos_dqn.torch.dqn import DQN
from parl_algos_dqn.torch.models import DuelingHead, DuelingQNetwork, QNetwork

__all__ = ["DDQN", "DQN", "DQNAgent", "DQNConfig", "DuelingHead", "DuelingQNetwork", "QNetwork"]
