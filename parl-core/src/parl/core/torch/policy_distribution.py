"""PARL 2.x's ``parl.core.torch.policy_distribution``: the classes of
:mod:`parl.core.policy_distribution`, which are written once for paddle and torch.

Examples:
    >>> import torch
    >>> from parl.core.torch.policy_distribution import CategoricalDistribution
    >>> dist = CategoricalDistribution(torch.zeros(2, 4))
    >>> [round(v, 4) for v in dist.logp(torch.tensor([0, 3])).tolist()]
    [-1.3863, -1.3863]
"""

from parl.core.policy_distribution import (
    CategoricalDistribution,
    DiagGaussianDistribution,
    PolicyDistribution,
    SoftCategoricalDistribution,
    SoftMultiCategoricalDistribution,
)

__all__ = [
    "CategoricalDistribution",
    "DiagGaussianDistribution",
    "PolicyDistribution",
    "SoftCategoricalDistribution",
    "SoftMultiCategoricalDistribution",
]
