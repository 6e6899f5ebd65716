"""PARL 2.x's ``parl.core.torch.policy_distribution``: the classes of
:mod:`parl.core.policy_distribution`, which are written once for paddle and torch."""

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
