"""Actor-critic algorithms for PARL: A2C, DDPG, TD3, SAC (with automatic entropy tuning), OAC,
and the offline CQL, IQL and Decision Transformer (DT).

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
    from parl_algos_ac.dt import DT, DTAgent, DTConfig
    from parl_algos_ac.dt_model import DecisionTransformerModel
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
    from parl_algos_ac.trajectories import ReturnConditioning, TrajectorySegments

__all__ = [
    "A2C",
    "CQL",
    "DDPG",
    "DT",
    "IQL",
    "OAC",
    "SAC",
    "TD3",
    "A2CAgent",
    "A2CConfig",
    "CQLConfig",
    "ContinuousAgent",
    "DDPGConfig",
    "DTAgent",
    "DTConfig",
    "DecisionTransformerModel",
    "DeterministicActorCritic",
    "DiscreteActorCritic",
    "EnsembleMLP",
    "GaussianActorCritic",
    "GaussianActorCriticValue",
    "IQLConfig",
    "OACConfig",
    "ReturnConditioning",
    "SACConfig",
    "TD3Config",
    "TrajectorySegments",
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
    "DT": "parl_algos_ac.dt",
    "DTAgent": "parl_algos_ac.dt",
    "DTConfig": "parl_algos_ac.dt",
    "DecisionTransformerModel": "parl_algos_ac.dt_model",
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
    "ReturnConditioning": "parl_algos_ac.trajectories",
    "TrajectorySegments": "parl_algos_ac.trajectories",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
