"""Actor-critic algorithms for PARL: A2C, DDPG, TD3, SAC (with automatic entropy tuning) and OAC.

Users normally reach the algorithms through the registry::

    import parl
    SAC = parl.algorithms.get("SAC")
"""

from parl_algos_ac.a2c import A2C, A2CConfig
from parl_algos_ac.agent import A2CAgent, ContinuousAgent
from parl_algos_ac.ddpg import DDPG, DDPGConfig
from parl_algos_ac.models import (
    DeterministicActorCritic,
    DiscreteActorCritic,
    EnsembleMLP,
    GaussianActorCritic,
)
from parl_algos_ac.oac import OAC, OACConfig
from parl_algos_ac.sac import SAC, SACConfig
from parl_algos_ac.td3 import TD3, TD3Config

__all__ = [
    "A2C",
    "DDPG",
    "OAC",
    "SAC",
    "TD3",
    "A2CAgent",
    "A2CConfig",
    "ContinuousAgent",
    "DDPGConfig",
    "DeterministicActorCritic",
    "DiscreteActorCritic",
    "EnsembleMLP",
    "GaussianActorCritic",
    "OACConfig",
    "SACConfig",
    "TD3Config",
]
