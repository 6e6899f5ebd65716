"""Multi-agent algorithms for PARL: MADDPG, QMIX and MAPPO on PettingZoo's parallel API.

Reach them through the registry (``parl.algorithms.get("MADDPG")``) or import them from here.
"""

from parl_algos_marl.agent import MADDPGAgent
from parl_algos_marl.maddpg import MADDPG, MADDPGConfig
from parl_algos_marl.models import MAModel

__all__ = ["MADDPG", "MADDPGAgent", "MADDPGConfig", "MAModel"]
