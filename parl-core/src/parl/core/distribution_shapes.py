"""What PARL's action distributions share on both backends: constants, shape rules, messages.

:mod:`parl.core.distributions` (paddle) and :mod:`parl.core.torch.distributions` build the same
classes on their framework's ops; the arithmetic constants, the broadcasting rule of a
standard deviation and the error messages live here once, so both refuse the same inputs in
the same words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "HALF_LOG_2PI",
    "LOG_2",
    "TANH_EPS",
    "broadcasts_to",
    "check_actions_shape",
    "check_std_shape",
    "check_temperature",
    "no_rsample_message",
    "tanh_entropy_message",
    "wrong_kind_message",
]

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
"""``log sqrt(2π)``: the constant of a Gaussian's log-density."""

LOG_2 = math.log(2.0)
"""``log 2``, in the stable ``log(1 - tanh(x)²) = 2·(log 2 - x - softplus(-2x))``."""

TANH_EPS = 1e-6
"""How far inside ``(-1, 1)`` a tanh-squashed action is pulled before ``atanh``."""


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target`` without growing ``target``."""
    if len(shape) > len(target):
        return False
    return all(size in (1, want) for size, want in zip(shape[::-1], target[::-1], strict=False))


def check_std_shape(std_shape: Sequence[int], mean_shape: Sequence[int]) -> None:
    """Raise the DiagGaussian error unless ``std`` broadcasts to the mean's shape."""
    if not broadcasts_to(std_shape, mean_shape):
        raise ValueError(
            f"DiagGaussian: std of shape {list(std_shape)} does not broadcast to the mean's "
            f"shape {list(mean_shape)}"
        )


def check_actions_shape(
    actions: Sequence[int], batch: Sequence[int], logits: Sequence[int]
) -> None:
    """Raise the Categorical error unless integer actions have the batch shape."""
    if list(actions) != list(batch):
        raise ValueError(
            f"actions have shape {list(actions)}, expected the batch shape {list(batch)} of the "
            f"logits {list(logits)}"
        )


def check_temperature(temperature: float) -> float:
    """A Gumbel-softmax temperature, checked to be > 0."""
    if not temperature > 0:
        raise ValueError(f"GumbelSoftmax needs a temperature > 0, got {temperature}")
    return float(temperature)


def no_rsample_message(kind: str) -> str:
    """Why a distribution without a reparameterised sample refuses ``rsample``."""
    return (
        f"{kind} has no reparameterised sample; use sample() and a score-function (log_prob) "
        "gradient"
    )


def wrong_kind_message(kind: str, other: str) -> str:
    """Why ``kl`` refuses a distribution of another kind."""
    return f"kl() needs another {kind}, got {other}"


def tanh_entropy_message() -> str:
    """Why a tanh-squashed Gaussian has no ``entropy``."""
    return (
        "a tanh-squashed Gaussian's entropy has no closed form; estimate it as -log_prob of a "
        "sample (rsample_with_log_prob), as SAC does"
    )
