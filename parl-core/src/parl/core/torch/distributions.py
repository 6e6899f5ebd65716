"""The action distributions under their torch import path: :mod:`parl.core.distributions`'
classes, which are written once and run on the framework of the tensors they are given."""

from parl.core.distributions import (
    Categorical,
    DiagGaussian,
    Distribution,
    GumbelSoftmax,
    TanhGaussian,
)

__all__ = ["Categorical", "DiagGaussian", "Distribution", "GumbelSoftmax", "TanhGaussian"]
