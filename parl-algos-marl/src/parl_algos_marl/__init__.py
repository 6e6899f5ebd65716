"""Multi-agent algorithms for PARL: MADDPG, QMIX, COMA and MAPPO on PettingZoo's parallel API.

Reach them through the registry (``parl.algorithms.get("MADDPG")``) or import them from here.
"""

from parl_algos_marl.agent import AgentTeam, COMAAgent, MADDPGAgent, MAPPOAgent, QMIXAgent
from parl_algos_marl.coma import COMA, COMAConfig, COMAStats
from parl_algos_marl.episode_buffer import EpisodeBatch, EpisodeReplayBuffer
from parl_algos_marl.maddpg import MADDPG, MADDPGConfig
from parl_algos_marl.mappo import MAPPO, MAPPOConfig
from parl_algos_marl.models import COMAModel, MAModel, MAPPOModel, QMixerModel, RNNAgentModel
from parl_algos_marl.qmix import QMIX, QMIXConfig

__all__ = [
    "COMA",
    "MADDPG",
    "MAPPO",
    "QMIX",
    "AgentTeam",
    "COMAAgent",
    "COMAConfig",
    "COMAModel",
    "COMAStats",
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
