"""Policy-gradient algorithms for PARL: REINFORCE (``PolicyGradient``) and ``PPO``.

Use the algorithms through the registry, as any plugin: ``parl.algorithms.get("PPO")``. PPO
comes with its agent (:class:`PPOAgent`, for vector envs) and models (:class:`DiscretePPOModel`,
:class:`ContinuousPPOModel`), which ``examples/PPO/train.py`` uses.
"""

from parl_algos_pg.policy_gradient import PolicyGradient, PolicyGradientConfig
from parl_algos_pg.ppo import PPO, PPOConfig, PPOStats
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
