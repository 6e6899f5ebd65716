"""Policy-gradient algorithms for PARL: REINFORCE (``PolicyGradient``) and ``PPO``.

Use the algorithms through the registry, as any plugin: ``parl.algorithms.get("PPO")``. Each
class is written once and runs on paddle or torch, the framework of the model it is given
(``DiscretePPOModel(4, 2, backend="torch")``). PPO comes with its agent (:class:`PPOAgent`, for
vector envs) and models (:class:`DiscretePPOModel`, :class:`ContinuousPPOModel`), which
``examples/PPO/train.py`` uses. Everything loads on first use, so either framework alone is
enough.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from parl_algos_pg.agent import PPOAgent
    from parl_algos_pg.models import ContinuousPPOModel, DiscretePPOModel
    from parl_algos_pg.policy_gradient import PolicyGradient, PolicyGradientConfig
    from parl_algos_pg.ppo import PPO, PPOConfig, PPOStats

__all__ = [
    "PPO",
    "ContinuousPPOModel",
    "DiscretePPOModel",
    "PPOAgent",
    "PPOConfig",
    "PPOStats",
    "PolicyGradient",
    "PolicyGradientConfig",
]

_LAZY = {
    "PPO": "parl_algos_pg.ppo",
    "PPOConfig": "parl_algos_pg.ppo",
    "PPOStats": "parl_algos_pg.ppo",
    "ContinuousPPOModel": "parl_algos_pg.models",
    "DiscretePPOModel": "parl_algos_pg.models",
    "PPOAgent": "parl_algos_pg.agent",
    "PolicyGradient": "parl_algos_pg.policy_gradient",
    "PolicyGradientConfig": "parl_algos_pg.policy_gradient",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
