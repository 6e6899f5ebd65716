"""Policy-gradient algorithms for PARL: REINFORCE (``PolicyGradient``) and ``PPO``.

Use them through the registry, as any plugin: ``parl.algorithms.get("PPO")``.
"""

from parl_algos_pg.policy_gradient import PolicyGradient, PolicyGradientConfig
from parl_algos_pg.ppo import PPO, PPOConfig

__all__ = ["PPO", "PPOConfig", "PolicyGradient", "PolicyGradientConfig"]
