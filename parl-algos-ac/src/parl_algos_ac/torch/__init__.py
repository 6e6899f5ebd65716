"""SAC on torch: the same name, config and model as the paddle classes.

``parl.algorithms.get("SAC", backend="torch")`` (or ``PARL_BACKEND=torch``) reaches it through
the registry; ``ContinuousAgent(..., device="cuda")`` trains on a GPU.
"""

from parl_algos_ac.config import SACConfig
from parl_algos_ac.torch.agent import ContinuousAgent
from parl_algos_ac.torch.models import EnsembleMLP, GaussianActorCritic
from parl_algos_ac.torch.sac import SAC

__all__ = ["SAC", "ContinuousAgent", "EnsembleMLP", "GaussianActorCritic", "SACConfig"]
