"""Multi-agent algorithms for PARL: MADDPG, QMIX and MAPPO on PettingZoo's parallel API.

Reach them through the registry (``parl.algorithms.get("MADDPG")``) or import them from here.
"""

from parl_algos_marl.agent import AgentTeam, MADDPGAgent, MAPPOAgent, QMIXAgent
from parl_algos_marl.episode_buffer import EpisodeBatch, EpisodeReplayBuffer
from parl_algos_marl.maddpg import MADDPG, MADDPGConfig
from parl_algos_marl.mappo import MAPPO, MAPPOConfig
from parl_algos_marl.models import MAModel, MAPPOModel, QMixerModel, RNNAgentModel
from parl_algos_marl.qmix import QMIX, QMIXConfig

__all__ = [
    "MADDPG",
    "MAPPO",
    "QMIX",
    "AgentTeam",
    "EpisodeBatch",
    "EpisodeReplayBuffer",
    "MADDPGAgent",
    "MADDPGConfig",
    "MAModel",
    "MAPPOAgent",
    "MAPPOConfig",
    "MAPPOModel",
    "QMIXAgent",
    "QMIXConfig",
    "QMixerModel",
    "RNNAgentModel",
]
