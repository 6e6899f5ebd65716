"""PARL 2.x's ``parl.core.paddle.policy_distribution``: its class names over our distributions.

PARL's classes take their arguments in its own way (a Gaussian from a ``(mean, logstd)`` pair)
and call the log-probability ``logp``; here they are thin subclasses of
:mod:`parl.core.distributions`, so the maths lives once (log-probabilities from
``log_softmax``, never ``log(p + eps)``). Checks that PARL made with ``assert`` raise
``ValueError``/``TypeError`` naming the problem.

``SoftCategoricalDistribution.sample`` is a Gumbel-softmax relaxation (temperature 1) that keeps
gradients, as MADDPG's actor loss needs; ``SoftMultiCategoricalDistribution`` is one such
relaxation per ``MultiDiscrete`` dimension.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parl.core.distributions import Categorical, DiagGaussian, Distribution

import numpy as np
import paddle
import paddle.nn.functional as F

__all__ = [
    "CategoricalDistribution",
    "DiagGaussianDistribution",
    "PolicyDistribution",
    "SoftCategoricalDistribution",
    "SoftMultiCategoricalDistribution",
]

PolicyDistribution = Distribution
"""PARL's base class name for :class:`parl.core.distributions.Distribution`."""

# Gumbel noise draws its uniforms from [EPS, 1 - EPS] so that log(-log(u)) stays finite.
_GUMBEL_EPS = 1e-4


def _need_rank(name: str, tensor: paddle.Tensor, rank: int, shape_hint: str) -> None:
    if tensor.ndim != rank:
        raise ValueError(
            f"{name} needs a {rank}-D tensor shaped {shape_hint}, got shape {list(tensor.shape)}"
        )


class DiagGaussianDistribution(DiagGaussian):
    """PARL's diagonal Gaussian, built from ``logits = (mean, logstd)``, both ``[batch, act_dim]``.

    Keeps PARL's attributes ``logits``, ``mean``, ``logstd`` and ``std``.
    """

    def __init__(self, logits: Sequence[paddle.Tensor]) -> None:
        if isinstance(logits, paddle.Tensor) or len(logits) != 2:
            raise TypeError(
                "DiagGaussianDistribution takes logits=(mean, logstd), a pair of tensors shaped "
                f"[batch, act_dim]; got {type(logits).__name__}"
            )
        mean, logstd = logits
        _need_rank("DiagGaussianDistribution's mean", mean, 2, "[batch, act_dim]")
        _need_rank("DiagGaussianDistribution's logstd", logstd, 2, "[batch, act_dim]")
        super().__init__(mean, logstd.exp())
        self.logits = logits
        self.logstd = logstd

    def sample(self) -> paddle.Tensor:
        """``mean + std * noise``, with gradients to ``mean`` and ``logstd`` (as PARL's)."""
        return self.rsample()

    def logp(self, actions: paddle.Tensor) -> paddle.Tensor:
        """Log-density of ``actions`` ``[batch, act_dim]``, one per row (PARL's name)."""
        _need_rank("DiagGaussianDistribution.logp's actions", actions, 2, "[batch, act_dim]")
        return self.log_prob(actions)


class CategoricalDistribution(Categorical):
    """PARL's categorical distribution over ``logits`` ``[batch, n_actions]``."""

    def __init__(self, logits: paddle.Tensor) -> None:
        _need_rank(type(self).__name__, logits, 2, "[batch, n_actions]")
        super().__init__(logits)

    def logp(self, actions: paddle.Tensor, eps: float = 1e-6) -> paddle.Tensor:
        """Log-probability of integer ``actions`` ``[batch]`` (PARL's name).

        ``eps`` is accepted for PARL's signature; PARL computed ``log(p + eps)`` to avoid
        ``log(0)``, which ``log_softmax`` never meets, so it has no effect here.
        """
        _need_rank("CategoricalDistribution.logp's actions", actions, 1, "[batch]")
        return self.log_prob(actions)


class SoftCategoricalDistribution(CategoricalDistribution):
    """A categorical whose :meth:`sample` is a differentiable Gumbel-softmax (PARL's MADDPG)."""

    def sample(self) -> paddle.Tensor:
        """Relaxed one-hot samples ``[batch, n_actions]`` (rows sum to 1), with gradients."""
        uniform = paddle.uniform(
            self.logits.shape, dtype=self.logits.dtype, min=_GUMBEL_EPS, max=1.0 - _GUMBEL_EPS
        )
        gumbel = -paddle.log(-paddle.log(uniform))
        return F.softmax(self.logits + gumbel, axis=-1)


class SoftMultiCategoricalDistribution(Distribution):
    """One :class:`SoftCategoricalDistribution` per dimension of a ``MultiDiscrete`` action.

    Args:
        logits: ``[batch, sum(high - low + 1)]``, the dimensions' logits side by side.
        low: each dimension's lowest action.
        high: each dimension's highest action.
    """

    def __init__(self, logits: paddle.Tensor, low: Any, high: Any) -> None:
        low_array, high_array = np.asarray(low), np.asarray(high)
        sizes = (high_array - low_array + 1).reshape(-1).tolist()
        if low_array.shape != high_array.shape or not sizes or min(sizes) < 1:
            raise ValueError(
                f"SoftMultiCategoricalDistribution needs low and high of one shape with "
                f"high >= low, got low={low!r}, high={high!r}"
            )
        if logits.shape[-1] != sum(sizes):
            raise ValueError(
                f"logits have {logits.shape[-1]} entries on the last axis, but low/high give "
                f"{sum(sizes)} actions in all ({sizes}); the last axis must hold them side by side"
            )
        self.logits, self.low, self.high = logits, low_array.reshape(-1), high_array
        parts = paddle.split(logits, num_or_sections=[int(size) for size in sizes], axis=-1)
        self.categoricals = [SoftCategoricalDistribution(part) for part in parts]
        self.batch_shape = list(logits.shape[:-1])

    def sample(self) -> paddle.Tensor:
        """The dimensions' relaxed samples plus their ``low``, side by side, with gradients."""
        samples = [
            float(low) + part.sample()
            for low, part in zip(self.low, self.categoricals, strict=True)
        ]
        return paddle.concat(samples, axis=-1)

    def log_prob(self, value: paddle.Tensor) -> paddle.Tensor:
        raise NotImplementedError(
            "SoftMultiCategoricalDistribution has no log_prob (PARL's had none either); use "
            "one CategoricalDistribution per dimension"
        )

    def entropy(self) -> paddle.Tensor:
        """The sum of the dimensions' entropies, ``[batch]``."""
        return paddle.add_n([part.entropy() for part in self.categoricals])

    def kl(self, other: Distribution) -> paddle.Tensor:
        """The sum of the dimensions' KL divergences, ``[batch]``."""
        self._same_kind(other)
        assert isinstance(other, SoftMultiCategoricalDistribution)
        if len(other.categoricals) != len(self.categoricals):
            raise ValueError(
                f"kl() needs as many dimensions on both sides, got {len(self.categoricals)} "
                f"and {len(other.categoricals)}"
            )
        pairs = zip(self.categoricals, other.categoricals, strict=True)
        return paddle.add_n([mine.kl(theirs) for mine, theirs in pairs])

    def mode(self) -> paddle.Tensor:
        """Each dimension's most likely action plus its ``low``, ``[batch, n_dims]``."""
        modes = [
            part.mode().astype("int64") + int(low)
            for low, part in zip(self.low, self.categoricals, strict=True)
        ]
        return paddle.stack(modes, axis=-1)
