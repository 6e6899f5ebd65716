"""PARL 2.x's ``parl.core.torch.policy_distribution``: its class names over our distributions.

As :mod:`parl.core.paddle.policy_distribution` on paddle: PARL's classes take their arguments
in its own way (a Gaussian from a ``(mean, logstd)`` pair) and call the log-probability
``logp``; here they are thin subclasses of :mod:`parl.core.torch.distributions`, so the maths
lives there (log-probabilities from ``log_softmax``, never ``log(p + eps)``; samples on the
logits' device, where PARL drew them on the GPU whenever one was present). Checks that PARL
made with ``assert`` raise ``ValueError``/``TypeError`` naming the problem.

``SoftCategoricalDistribution.sample`` is a Gumbel-softmax relaxation (temperature 1) that
keeps gradients, as MADDPG's actor loss needs; ``SoftMultiCategoricalDistribution`` is one
such relaxation per ``MultiDiscrete`` dimension.

Examples:
    >>> import torch
    >>> from parl.core.torch.policy_distribution import CategoricalDistribution
    >>> dist = CategoricalDistribution(torch.zeros(2, 4))
    >>> [round(v, 4) for v in dist.logp(torch.tensor([0, 3])).tolist()]
    [-1.3863, -1.3863]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parl.core.torch.distributions import Categorical, DiagGaussian, Distribution, GumbelSoftmax

import numpy as np
import torch

__all__ = [
    "CategoricalDistribution",
    "DiagGaussianDistribution",
    "PolicyDistribution",
    "SoftCategoricalDistribution",
    "SoftMultiCategoricalDistribution",
]

PolicyDistribution = Distribution
"""PARL's base class name for :class:`parl.core.torch.distributions.Distribution`."""


def _need_rank(name: str, tensor: torch.Tensor, rank: int, shape_hint: str) -> None:
    if tensor.ndim != rank:
        raise ValueError(
            f"{name} needs a {rank}-D tensor shaped {shape_hint}, got shape {list(tensor.shape)}"
        )


class DiagGaussianDistribution(DiagGaussian):
    """PARL's diagonal Gaussian, built from ``logits = (mean, logstd)``, both ``[batch, act_dim]``.

    Keeps PARL's attributes ``logits``, ``mean``, ``logstd`` and ``std``.
    """

    def __init__(self, logits: Sequence[torch.Tensor]) -> None:
        if isinstance(logits, torch.Tensor) or len(logits) != 2:
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

    def sample(self) -> torch.Tensor:
        """``mean + std * noise``, with gradients to ``mean`` and ``logstd`` (as PARL's)."""
        return self.rsample()

    def logp(self, actions: torch.Tensor) -> torch.Tensor:
        """Log-density of ``actions`` ``[batch, act_dim]``, one per row (PARL's name)."""
        _need_rank("DiagGaussianDistribution.logp's actions", actions, 2, "[batch, act_dim]")
        return self.log_prob(actions)


class CategoricalDistribution(Categorical):
    """PARL's categorical distribution over ``logits`` ``[batch, n_actions]``."""

    def __init__(self, logits: torch.Tensor) -> None:
        _need_rank(type(self).__name__, logits, 2, "[batch, n_actions]")
        super().__init__(logits)

    def logp(self, actions: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
        """Log-probability of integer ``actions`` ``[batch]`` (PARL's name).

        ``eps`` is accepted for PARL's signature; PARL computed ``log(p + eps)`` to avoid
        ``log(0)``, which ``log_softmax`` never meets, so it has no effect here.
        """
        _need_rank("CategoricalDistribution.logp's actions", actions, 1, "[batch]")
        return self.log_prob(actions)


class SoftCategoricalDistribution(CategoricalDistribution):
    """A categorical whose :meth:`sample` is a differentiable Gumbel-softmax (PARL's MADDPG)."""

    def sample(self) -> torch.Tensor:
        """Relaxed one-hot samples ``[batch, n_actions]`` (rows sum to 1), with gradients."""
        return GumbelSoftmax(self.logits).rsample()


class SoftMultiCategoricalDistribution(Distribution):
    """One :class:`SoftCategoricalDistribution` per dimension of a ``MultiDiscrete`` action.

    Args:
        logits: ``[batch, sum(high - low + 1)]``, the dimensions' logits side by side.
        low: each dimension's lowest action.
        high: each dimension's highest action.
    """

    def __init__(self, logits: torch.Tensor, low: Any, high: Any) -> None:
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
        parts = torch.split(logits, [int(size) for size in sizes], dim=-1)
        self.categoricals = [SoftCategoricalDistribution(part) for part in parts]
        self.batch_shape = list(logits.shape[:-1])

    def sample(self) -> torch.Tensor:
        """The dimensions' relaxed samples plus their ``low``, side by side, with gradients."""
        samples = [
            float(low) + part.sample()
            for low, part in zip(self.low, self.categoricals, strict=True)
        ]
        return torch.cat(samples, dim=-1)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(
            "SoftMultiCategoricalDistribution has no log_prob (PARL's had none either); use "
            "one CategoricalDistribution per dimension"
        )

    def entropy(self) -> torch.Tensor:
        """The sum of the dimensions' entropies, ``[batch]``."""
        return torch.stack([part.entropy() for part in self.categoricals]).sum(0)

    def kl(self, other: Distribution) -> torch.Tensor:
        """The sum of the dimensions' KL divergences, ``[batch]``."""
        self._same_kind(other)
        assert isinstance(other, SoftMultiCategoricalDistribution)
        if len(other.categoricals) != len(self.categoricals):
            raise ValueError(
                f"kl() needs as many dimensions on both sides, got {len(self.categoricals)} "
                f"and {len(other.categoricals)}"
            )
        pairs = zip(self.categoricals, other.categoricals, strict=True)
        return torch.stack([mine.kl(theirs) for mine, theirs in pairs]).sum(0)

    def mode(self) -> torch.Tensor:
        """Each dimension's most likely action plus its ``low``, ``[batch, n_dims]``."""
        modes = [
            part.mode().long() + int(low)
            for low, part in zip(self.low, self.categoricals, strict=True)
        ]
        return torch.stack(modes, dim=-1)
