"""Actor-critic algorithms for PARL: A2C, DDPG, TD3, SAC (with automatic entropy tuning), OAC,
and the offline CQL and IQL.

Users normally reach the algorithms through the registry::

    import parl
    SAC = parl.algorithms.get("SAC")  # the selected backend's (parl.get_backend())

Every class is written once and runs on paddle or torch, the framework of the model it is
given (``GaussianActorCritic(3, 1, backend="torch")``; default :func:`parl.get_backend`); the
registry lists each under both. Modules load on first use, so either framework alone is enough.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

if TYPE_CHECKING:
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

_LAZY = {
    "A2C": "parl_algos_ac.a2c",
    "A2CConfig": "parl_algos_ac.a2c",
    "A2CAgent": "parl_algos_ac.agent",
    "ContinuousAgent": "parl_algos_ac.agent",
    "CQL": "parl_algos_ac.cql",
    "CQLConfig": "parl_algos_ac.cql",
    "DDPG": "parl_algos_ac.ddpg",
    "DDPGConfig": "parl_algos_ac.ddpg",
    "IQL": "parl_algos_ac.iql",
    "IQLConfig": "parl_algos_ac.iql",
    "DeterministicActorCritic": "parl_algos_ac.models",
    "DiscreteActorCritic": "parl_algos_ac.models",
    "EnsembleMLP": "parl_algos_ac.models",
    "GaussianActorCritic": "parl_algos_ac.models",
    "GaussianActorCriticValue": "parl_algos_ac.models",
    "OAC": "parl_algos_ac.oac",
    "OACConfig": "parl_algos_ac.oac",
    "SAC": "parl_algos_ac.sac",
    "SACConfig": "parl_algos_ac.sac",
    "TD3": "parl_algos_ac.td3",
    "TD3Config": "parl_algos_ac.td3",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
