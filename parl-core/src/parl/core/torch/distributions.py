"""Action distributions on torch: the classes of :mod:`parl.core.distributions`, same semantics.

:class:`Categorical`, :class:`GumbelSoftmax`, :class:`DiagGaussian` and :class:`TanhGaussian`
take the policy network's output for a batch of any shape and give :meth:`~Distribution.sample`
(no gradient), :meth:`~Distribution.rsample` (reparameterised), :meth:`~Distribution.log_prob`,
:meth:`~Distribution.entropy`, :meth:`~Distribution.kl` and :meth:`~Distribution.mode`, exactly
as the paddle classes: log-probabilities from ``log_softmax``, Gaussian ones summed over the last
(action) axis, a standard deviation that broadcasts to the mean, the stable tanh correction.
The constants, shape rules and messages are :mod:`parl.core.distribution_shapes`', shared
with paddle. They are written with torch's tensor ops, not ``torch.distributions``, so that
both backends compute the same expressions in the same order.

Examples:
    >>> import torch
    >>> dist = Categorical(torch.tensor([[2.0, 0.0, -1.0]]))
    >>> dist.mode().tolist(), dist.batch_shape
    ([0], [1])
    >>> gaussian = DiagGaussian(torch.zeros(4, 2), torch.ones(1, 2))  # std broadcasts
    >>> gaussian.batch_shape, list(gaussian.log_prob(gaussian.sample()).shape)
    ([4], [4])
"""

from __future__ import annotations

import abc
import functools

from parl.core.distribution_shapes import (
    HALF_LOG_2PI,
    LOG_2,
    TANH_EPS,
    check_actions_shape,
    check_std_shape,
    check_temperature,
    no_rsample_message,
    tanh_entropy_message,
    wrong_kind_message,
)

import torch
import torch.nn.functional as F

__all__ = ["Categorical", "DiagGaussian", "Distribution", "GumbelSoftmax", "TanhGaussian"]


class Distribution(abc.ABC):
    """The interface every action distribution follows; see the module docstring."""

    batch_shape: list[int]

    def sample(self) -> torch.Tensor:
        """Draw one action per batch entry, without gradients."""
        with torch.no_grad():
            return self.rsample().detach()

    def rsample(self) -> torch.Tensor:
        """Draw one action per batch entry so that gradients flow to the distribution's inputs."""
        raise NotImplementedError(no_rsample_message(type(self).__name__))

    @abc.abstractmethod
    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """Log-probability (density) of ``value``, one per batch entry."""
        raise NotImplementedError

    @abc.abstractmethod
    def entropy(self) -> torch.Tensor:
        """Entropy, one per batch entry."""
        raise NotImplementedError

    @abc.abstractmethod
    def kl(self, other: Distribution) -> torch.Tensor:
        """``KL(self || other)``, one per batch entry; ``other`` is of the same kind."""
        raise NotImplementedError

    @abc.abstractmethod
    def mode(self) -> torch.Tensor:
        """The most likely action (the greedy one), one per batch entry."""
        raise NotImplementedError

    def _same_kind(self, other: Distribution) -> None:
        if type(other) is not type(self):
            raise TypeError(wrong_kind_message(type(self).__name__, type(other).__name__))


class Categorical(Distribution):
    """A categorical distribution over the last axis of ``logits`` (unnormalised log-probs).

    Args:
        logits: ``[*batch, n_actions]``; ``batch_shape`` is ``[*batch]``.
    """

    def __init__(self, logits: torch.Tensor) -> None:
        if logits.ndim < 1:
            raise ValueError("Categorical needs logits with an action axis, got a scalar")
        self.logits = logits
        self.log_probs = F.log_softmax(logits, dim=-1)
        self.batch_shape = list(logits.shape[:-1])

    @functools.cached_property
    def probs(self) -> torch.Tensor:
        """Action probabilities ``[*batch, n_actions]`` (computed once)."""
        return self.log_probs.exp()

    def sample(self) -> torch.Tensor:
        """Draw int64 actions ``[*batch]``."""
        with torch.no_grad():
            flat = self.probs.reshape(-1, self.logits.shape[-1])
            return torch.multinomial(flat, num_samples=1).reshape(self.batch_shape)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """Log-probability of integer actions shaped ``[*batch]``."""
        check_actions_shape(value.shape, self.batch_shape, self.logits.shape)
        index = value.long().unsqueeze(-1)
        return self.log_probs.gather(-1, index).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        return -(self.probs * self.log_probs).sum(-1)

    def kl(self, other: Distribution) -> torch.Tensor:
        self._same_kind(other)
        assert isinstance(other, Categorical)
        return (self.probs * (self.log_probs - other.log_probs)).sum(-1)

    def mode(self) -> torch.Tensor:
        return self.logits.argmax(dim=-1)


class GumbelSoftmax(Categorical):
    """A categorical distribution with a relaxed, reparameterised one-hot sample.

    As the paddle class: :meth:`rsample` draws ``softmax((logits + g) / temperature)`` with
    Gumbel noise ``g = -log(-log U)``; :meth:`mode` is the one-hot of the argmax.

    Args:
        logits: ``[*batch, n_actions]``.
        temperature: the softmax temperature, > 0; lower is closer to one-hot.
    """

    def __init__(self, logits: torch.Tensor, temperature: float = 1.0) -> None:
        temperature = check_temperature(temperature)
        super().__init__(logits)
        self.temperature = temperature

    def rsample(self) -> torch.Tensor:
        """A relaxed one-hot ``[*batch, n_actions]`` whose gradients reach the logits."""
        uniform = torch.empty_like(self.logits).uniform_(1e-10, 1.0)
        gumbel = -torch.log(-torch.log(uniform))
        return F.softmax((self.logits + gumbel) / self.temperature, dim=-1)

    def mode(self) -> torch.Tensor:
        """The one-hot of the most likely action ``[*batch, n_actions]``."""
        return F.one_hot(self.logits.argmax(dim=-1), self.logits.shape[-1]).to(self.logits.dtype)


class DiagGaussian(Distribution):
    """A Gaussian with diagonal covariance over the last axis (the action dimensions).

    The mean's shape is the distribution's; ``std`` broadcasts to it (``[1, act_dim]`` or
    ``[act_dim]`` for a state-independent one; leading size-1 axes beyond the mean's rank are
    dropped, so one unbatched observation gives one action).

    Args:
        mean: ``[*batch, act_dim]``.
        std: the standard deviation (not its log), broadcastable to ``mean``.
    """

    def __init__(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        if mean.ndim < 1:
            raise ValueError("DiagGaussian needs an action axis, got a scalar mean")
        while std.ndim > mean.ndim and std.shape[0] == 1:
            std = std.squeeze(0)
        shape = list(mean.shape)
        check_std_shape(std.shape, shape)
        self.mean = mean
        self.std = std if list(std.shape) == shape else std.expand(shape)
        self.batch_shape = shape[:-1]

    @classmethod
    def from_log_std(cls, mean: torch.Tensor, log_std: torch.Tensor) -> DiagGaussian:
        """Build from the log of the standard deviation (as SAC-style policies output it)."""
        return cls(mean, log_std.exp())

    def rsample(self) -> torch.Tensor:
        return self.mean + self.std * torch.randn_like(self.mean)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        z = (value - self.mean) / self.std
        return (-0.5 * z * z - self.std.log() - HALF_LOG_2PI).sum(-1)

    def entropy(self) -> torch.Tensor:
        return (0.5 + HALF_LOG_2PI + self.std.log()).sum(-1)

    def kl(self, other: Distribution) -> torch.Tensor:
        self._same_kind(other)
        assert isinstance(other, DiagGaussian)
        ratio = (self.std / other.std).square()
        shift = ((self.mean - other.mean) / other.std).square()
        return 0.5 * (ratio + shift - 1.0 - ratio.log()).sum(-1)

    def mode(self) -> torch.Tensor:
        return self.mean


class TanhGaussian(Distribution):
    """``tanh`` of a diagonal Gaussian: actions in ``(-1, 1)``, as SAC's policy (Haarnoja 2018).

    As the paddle class: ``log_prob`` includes ``-Σ log(1 − tanh(x)²)``, computed from the
    pre-squash sample as ``2·(log 2 − x − softplus(−2x))``; use :meth:`rsample_with_log_prob`
    in a loss.

    Args:
        mean: pre-squash mean ``[*batch, act_dim]``.
        std: pre-squash standard deviation, broadcastable to ``mean``.
    """

    EPS = TANH_EPS

    def __init__(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        self.base = DiagGaussian(mean, std)
        self.batch_shape = self.base.batch_shape

    @classmethod
    def from_log_std(cls, mean: torch.Tensor, log_std: torch.Tensor) -> TanhGaussian:
        """Build from the log of the pre-squash standard deviation."""
        return cls(mean, log_std.exp())

    def _log_prob_pre_squash(self, x: torch.Tensor) -> torch.Tensor:
        log_det = 2.0 * (LOG_2 - x - F.softplus(-2.0 * x))
        return self.base.log_prob(x) - log_det.sum(-1)

    def rsample_with_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action and its log-probability, both with gradients."""
        x = self.base.rsample()
        return torch.tanh(x), self._log_prob_pre_squash(x)

    def rsample(self) -> torch.Tensor:
        return torch.tanh(self.base.rsample())

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """Log-density of actions in ``(-1, 1)`` (values at ±1 are pulled in by :attr:`EPS`)."""
        x = torch.atanh(value.clamp(-1.0 + self.EPS, 1.0 - self.EPS))
        return self._log_prob_pre_squash(x)

    def entropy(self) -> torch.Tensor:
        raise NotImplementedError(tanh_entropy_message())

    def kl(self, other: Distribution) -> torch.Tensor:
        """``KL(self || other)``: that of the Gaussians, since ``tanh`` is a bijection."""
        self._same_kind(other)
        assert isinstance(other, TanhGaussian)
        return self.base.kl(other.base)

    def mode(self) -> torch.Tensor:
        return torch.tanh(self.base.mean)
