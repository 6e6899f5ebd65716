"""Multi-agent algorithms for PARL: MADDPG, QMIX and MAPPO on PettingZoo's parallel API.

Reach them through the registry (``parl.algorithms.get("MADDPG")``) or import them from here.
"""

from parl_algos_marl.agent import MADDPGAgent, QMIXAgent
from parl_algos_marl.episode_buffer import EpisodeBatch, EpisodeReplayBuffer
from parl_algos_marl.maddpg import MADDPG, MADDPGConfig
from parl_algos_marl.models import MAModel, QMixerModel, RNNAgentModel
from parl_algos_marl.qmix import QMIX, QMIXConfig

__all__ = [
    "MADDPG",
    "QMIX",
    "EpisodeBatch",
    "EpisodeReplayBuffer",
    "MADDPGAgent",
    "MADDPGConfig",
    "MAModel",
    "QMIXAgent",
    "QMIXConfig",
    "QMixerModel",
    "RNNAgentModel",
]
