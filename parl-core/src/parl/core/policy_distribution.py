"""PARL 2.x's ``policy_distribution`` classes over our distributions, for paddle and torch.

PARL's classes take their arguments in its own way (a Gaussian from a ``(mean, logstd)`` pair)
and call the log-probability ``logp``; here they are thin subclasses of
:mod:`parl.core.distributions`, written once on the ops of the tensors they are given, so the
maths lives there (log-probabilities from ``log_softmax``, never ``log(p + eps)``; samples on
the logits' device, where PARL's torch version drew them on the GPU whenever one was present).
Checks that PARL made with ``assert`` raise ``ValueError``/``TypeError`` naming the problem.
PARL 2.x imports them as ``parl.core.paddle.policy_distribution`` and
``parl.core.torch.policy_distribution``; both names lead here.

``SoftCategoricalDistribution.sample`` is a Gumbel-softmax relaxation (temperature 1) that
keeps gradients, as MADDPG's actor loss needs; ``SoftMultiCategoricalDistribution`` is one
such relaxation per ``MultiDiscrete`` dimension.

Examples:
    >>> import paddle
    >>> dist = CategoricalDistribution(paddle.zeros([2, 4]))
    >>> [round(v, 4) for v in dist.logp(paddle.to_tensor([0, 3])).tolist()]
    [-1.3863, -1.3863]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parl.core.distributions import Categorical, DiagGaussian, Distribution, GumbelSoftmax
from parl.core.ops import Tensor, ops_of_tensor

import numpy as np

__all__ = [
    "CategoricalDistribution",
    "DiagGaussianDistribution",
    "PolicyDistribution",
    "SoftCategoricalDistribution",
    "SoftMultiCategoricalDistribution",
]

PolicyDistribution = Distribution
"""PARL's base class name for :class:`parl.core.distributions.Distribution`."""


def _need_rank(name: str, tensor: Tensor, rank: int, shape_hint: str) -> None:
    if tensor.ndim != rank:
        raise ValueError(
            f"{name} needs a {rank}-D tensor shaped {shape_hint}, got shape {list(tensor.shape)}"
        )


class DiagGaussianDistribution(DiagGaussian):
    """PARL's diagonal Gaussian, built from ``logits = (mean, logstd)``, both ``[batch, act_dim]``.

    Keeps PARL's attributes ``logits``, ``mean``, ``logstd`` and ``std``.
    """

    def __init__(self, logits: Sequence[Tensor]) -> None:
        if not isinstance(logits, (tuple, list)) or len(logits) != 2:
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

    def sample(self) -> Tensor:
        """``mean + std * noise``, with gradients to ``mean`` and ``logstd`` (as PARL's)."""
        return self.rsample()

    def logp(self, actions: Tensor) -> Tensor:
        """Log-density of ``actions`` ``[batch, act_dim]``, one per row (PARL's name)."""
        _need_rank("DiagGaussianDistribution.logp's actions", actions, 2, "[batch, act_dim]")
        return self.log_prob(actions)


class CategoricalDistribution(Categorical):
    """PARL's categorical distribution over ``logits`` ``[batch, n_actions]``."""

    def __init__(self, logits: Tensor) -> None:
        _need_rank(type(self).__name__, logits, 2, "[batch, n_actions]")
        super().__init__(logits)

    def logp(self, actions: Tensor, eps: float = 1e-6) -> Tensor:
        """Log-probability of integer ``actions`` ``[batch]`` (PARL's name).

        ``eps`` is accepted for PARL's signature; PARL computed ``log(p + eps)`` to avoid
        ``log(0)``, which ``log_softmax`` never meets, so it has no effect here.
        """
        _need_rank("CategoricalDistribution.logp's actions", actions, 1, "[batch]")
        return self.log_prob(actions)


class SoftCategoricalDistribution(CategoricalDistribution):
    """A categorical whose :meth:`sample` is a differentiable Gumbel-softmax (PARL's MADDPG)."""

    def sample(self) -> Tensor:
        """Relaxed one-hot samples ``[batch, n_actions]`` (rows sum to 1), with gradients."""
        return GumbelSoftmax(self.logits).rsample()


class SoftMultiCategoricalDistribution(Distribution):
    """One :class:`SoftCategoricalDistribution` per dimension of a ``MultiDiscrete`` action.

    Args:
        logits: ``[batch, sum(high - low + 1)]``, the dimensions' logits side by side.
        low: each dimension's lowest action.
        high: each dimension's highest action.
    """

    def __init__(self, logits: Tensor, low: Any, high: Any) -> None:
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
        self.ops = ops_of_tensor(logits)
        ends = np.cumsum(sizes).tolist()
        parts = [logits[..., end - size : end] for size, end in zip(sizes, ends, strict=True)]
        self.categoricals = [SoftCategoricalDistribution(part) for part in parts]
        self.batch_shape = list(logits.shape[:-1])

    def sample(self) -> Tensor:
        """The dimensions' relaxed samples plus their ``low``, side by side, with gradients."""
        samples = [
            float(low) + part.sample()
            for low, part in zip(self.low, self.categoricals, strict=True)
        ]
        return self.ops.concat(samples, axis=-1)

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError(
            "SoftMultiCategoricalDistribution has no log_prob (PARL's had none either); use "
            "one CategoricalDistribution per dimension"
        )

    def entropy(self) -> Tensor:
        """The sum of the dimensions' entropies, ``[batch]``."""
        return self._sum([part.entropy() for part in self.categoricals])

    def kl(self, other: Distribution) -> Tensor:
        """The sum of the dimensions' KL divergences, ``[batch]``."""
        self._same_kind(other)
        assert isinstance(other, SoftMultiCategoricalDistribution)
        if len(other.categoricals) != len(self.categoricals):
            raise ValueError(
                f"kl() needs as many dimensions on both sides, got {len(self.categoricals)} "
                f"and {len(other.categoricals)}"
            )
        pairs = zip(self.categoricals, other.categoricals, strict=True)
        return self._sum([mine.kl(theirs) for mine, theirs in pairs])

    def mode(self) -> Tensor:
        """Each dimension's most likely action plus its ``low``, ``[batch, n_dims]``."""
        modes = [
            part.mode() + int(low) for low, part in zip(self.low, self.categoricals, strict=True)
        ]
        return self.ops.stack(modes, axis=-1)

    def _sum(self, per_dimension: list[Tensor]) -> Tensor:
        return self.ops.sum(self.ops.stack(per_dimension, axis=0), axis=0)
