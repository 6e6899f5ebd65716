"""PPO on torch: the same names, config and agent as the paddle classes.

``parl.algorithms.get("PPO", backend="torch")`` (or ``PARL_BACKEND=torch``) reaches it through
the registry; ``PPOAgent(..., device="cuda")`` trains on a GPU.
"""

from parl_algos_pg.ppo_config import PPOConfig, PPOStats
from parl_algos_pg.torch.agent import PPOAgent
from parl_algos_pg.torch.models import ContinuousPPOModel, DiscretePPOModel
from parl_algos_pg.torch.ppo import PPO

__all__ = ["PPO", "ContinuousPPOModel", "DiscretePPOModel", "PPOAgent", "PPOConfig", "PPOStats"]
