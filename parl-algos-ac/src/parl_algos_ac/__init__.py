"""Actor-critic algorithms for PARL: A2C, DDPG, TD3, SAC (with automatic entropy tuning), OAC,
and the offline CQL and IQL.

Users normally reach the algorithms through the registry::

    import parl
    SAC = parl.algorithms.get("SAC")
"""

from parl_algos_ac.a2c import A2C, A2CConfig
from parl_algos_ac.agent import A2CAgent, ContinuousAgent
from parl_algos_ac.cql import CQL, CQLConfig
from parl_algos_ac.ddpg import DDPG, DDPGConfig
from parl_algos_ac.iql import IQL, IQLConfig
from parl_algos_ac.models import (
    DeterministicActorCritic,
    DiscreteActorCritic,
    EnsembleMLP,
    GaussianActorCritic,
    GaussianActorCriticValue,
)
from parl_algos_ac.oac import OAC, OACConfig
from parl_algos_ac.sac import SAC, SACConfig
from parl_algos_ac.td3 import TD3, TD3Config

__all__ = [
    "A2C",
    "CQL",
    "DDPG",
    "IQL",
    "OAC",
    "SAC",
    "TD3",
    "A2CAgent",
    "A2CConfig",
    "CQLConfig",
    "ContinuousAgent",
    "DDPGConfig",
    "DeterministicActorCritic",
    "DiscreteActorCritic",
    "EnsembleMLP",
    "GaussianActorCritic",
    "GaussianActorCriticValue",
    "IQLConfig",
    "OACConfig",
    "SACConfig",
    "TD3Config",
]
