"""Policy-gradient algorithms for PARL: REINFORCE (``PolicyGradient``) and ``PPO``.

Use the algorithms through the registry, as any plugin: ``parl.algorithms.get("PPO")`` (the
selected backend's, ``parl.get_backend()``). PPO comes with its agent (:class:`PPOAgent`, for
vector envs) and models (:class:`DiscretePPOModel`, :class:`ContinuousPPOModel`), which
``examples/PPO/train.py`` uses. The paddle classes are here, PPO on torch in
:mod:`parl_algos_pg.torch` (same names, same :class:`PPOConfig`); both load on first use, so
either framework alone is enough.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

from parl_algos_pg.ppo_config import PPOConfig, PPOStats

if TYPE_CHECKING:
    from parl_algos_pg.policy_gradient import PolicyGradient, PolicyGradientConfig
    from parl_algos_pg.ppo import PPO
    from parl_algos_pg.ppo_agent import PPOAgent
    from parl_algos_pg.ppo_models import ContinuousPPOModel, DiscretePPOModel

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
    "ContinuousPPOModel": "parl_algos_pg.ppo_models",
    "DiscretePPOModel": "parl_algos_pg.ppo_models",
    "PPOAgent": "parl_algos_pg.ppo_agent",
    "PolicyGradient": "parl_algos_pg.policy_gradient",
    "PolicyGradientConfig": "parl_algos_pg.policy_gradient",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
