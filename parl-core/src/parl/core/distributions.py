"""Action distributions for policies: categorical, diagonal Gaussian, tanh-squashed Gaussian.

Each takes the policy network's output for a batch of any shape and gives what policy-gradient,
actor-critic and V-trace losses need: :meth:`~Distribution.sample` (no gradient),
:meth:`~Distribution.rsample` (reparameterised, gradients flow to the parameters),
:meth:`~Distribution.log_prob`, :meth:`~Distribution.entropy`, :meth:`~Distribution.kl` and
:meth:`~Distribution.mode` (the greedy action). ``batch_shape`` is the shape of one
log-probability per action; a Gaussian's last axis is the action (event) dimension and is
summed over.

They are written once for paddle and torch, on the ops of the framework of the tensors they
are given (:mod:`parl.core.ops`), so both compute the same expressions in the same order. They
use neither ``paddle.distribution`` (whose ``Categorical`` normalises logits by their sum for
``log_prob`` but by softmax for ``sample``: paddle issues #50022, #54733) nor
``torch.distributions``: log-probabilities here always come from ``log_softmax``. Every random
draw goes through the ops (``randn_like``, ``uniform_like``, ``multinomial``).

Examples:
    >>> import paddle
    >>> dist = Categorical(paddle.to_tensor([[2.0, 0.0, -1.0]]))
    >>> dist.mode().tolist(), dist.batch_shape
    ([0], [1])
    >>> gaussian = DiagGaussian(paddle.zeros([4, 2]), paddle.ones([1, 2]))  # std broadcasts
    >>> gaussian.batch_shape, list(gaussian.log_prob(gaussian.sample()).shape)
    ([4], [4])
"""

from __future__ import annotations

import abc
import functools
from typing import Any

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
from parl.core.ops import Tensor, ops_of_tensor

__all__ = ["Categorical", "DiagGaussian", "Distribution", "GumbelSoftmax", "TanhGaussian"]


class Distribution(abc.ABC):
    """The interface every action distribution follows; see the module docstring."""

    batch_shape: list[int]

    ops: Any
    """The ops of the framework of the tensors given (:mod:`parl.core.ops`)."""

    def sample(self) -> Tensor:
        """Draw one action per batch entry, without gradients."""
        with self.ops.no_grad():
            return self.rsample().detach()

    def rsample(self) -> Tensor:
        """Draw one action per batch entry so that gradients flow to the distribution's inputs."""
        raise NotImplementedError(no_rsample_message(type(self).__name__))

    @abc.abstractmethod
    def log_prob(self, value: Tensor) -> Tensor:
        """Log-probability (density) of ``value``, one per batch entry."""
        raise NotImplementedError

    @abc.abstractmethod
    def entropy(self) -> Tensor:
        """Entropy, one per batch entry."""
        raise NotImplementedError

    @abc.abstractmethod
    def kl(self, other: Distribution) -> Tensor:
        """``KL(self || other)``, one per batch entry; ``other`` is of the same kind."""
        raise NotImplementedError

    @abc.abstractmethod
    def mode(self) -> Tensor:
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

    def __init__(self, logits: Tensor) -> None:
        if logits.ndim < 1:
            raise ValueError("Categorical needs logits with an action axis, got a scalar")
        self.ops = ops_of_tensor(logits)
        self.logits = logits
        self.log_probs = self.ops.log_softmax(logits, axis=-1)
        self.batch_shape = list(logits.shape[:-1])

    @functools.cached_property
    def probs(self) -> Tensor:
        """Action probabilities ``[*batch, n_actions]`` (computed once)."""
        return self.log_probs.exp()

    def sample(self) -> Tensor:
        """Draw int64 actions ``[*batch]``."""
        with self.ops.no_grad():
            flat = self.probs.reshape([-1, self.logits.shape[-1]])
            return self.ops.multinomial(flat).reshape(self.batch_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        """Log-probability of integer actions shaped ``[*batch]``."""
        check_actions_shape(value.shape, self.batch_shape, self.logits.shape)
        return self.ops.take_along(self.log_probs, self.ops.to_tensor(value, "int64"))

    def entropy(self) -> Tensor:
        return -(self.probs * self.log_probs).sum(-1)

    def kl(self, other: Distribution) -> Tensor:
        self._same_kind(other)
        assert isinstance(other, Categorical)
        return (self.probs * (self.log_probs - other.log_probs)).sum(-1)

    def mode(self) -> Tensor:
        return self.ops.argmax(self.logits, axis=-1)


class GumbelSoftmax(Categorical):
    """A categorical distribution with a relaxed, reparameterised one-hot sample.

    :meth:`rsample` draws ``softmax((logits + g) / temperature)`` with Gumbel noise
    ``g = -log(-log U)``, ``U ~ Uniform(0, 1)`` (Jang et al. 2017; Maddison et al. 2017): a
    point of the simplex that gradients flow through, as MADDPG's discrete policies use (PARL's
    ``SoftCategoricalDistribution`` at temperature 1). ``log_prob``, ``entropy``, ``kl`` and
    ``sample`` are the underlying categorical's; :meth:`mode` is the one-hot of the argmax.

    Args:
        logits: ``[*batch, n_actions]``.
        temperature: the softmax temperature, > 0; lower is closer to one-hot.
    """

    def __init__(self, logits: Tensor, temperature: float = 1.0) -> None:
        temperature = check_temperature(temperature)
        super().__init__(logits)
        self.temperature = temperature

    def rsample(self) -> Tensor:
        """A relaxed one-hot ``[*batch, n_actions]`` whose gradients reach the logits."""
        gumbel = -(-self.ops.uniform_like(self.logits, 1e-10, 1.0).log()).log()
        return self.ops.softmax((self.logits + gumbel) / self.temperature, axis=-1)

    def mode(self) -> Tensor:
        """The one-hot of the most likely action ``[*batch, n_actions]``."""
        return self.ops.one_hot(self.ops.argmax(self.logits, axis=-1), self.logits.shape[-1])


class DiagGaussian(Distribution):
    """A Gaussian with diagonal covariance over the last axis (the action dimensions).

    The mean's shape is the distribution's; ``std`` broadcasts to it, so a state-independent
    standard deviation shaped ``[1, act_dim]`` or ``[act_dim]`` serves a whole batch (leading
    size-1 axes of ``std`` beyond the mean's rank are dropped, so that with one unbatched
    observation's ``[act_dim]`` mean it gives one action, not a batch of one).

    Args:
        mean: ``[*batch, act_dim]``.
        std: the standard deviation (not its log), broadcastable to ``mean``.
    """

    def __init__(self, mean: Tensor, std: Tensor) -> None:
        if mean.ndim < 1:
            raise ValueError("DiagGaussian needs an action axis, got a scalar mean")
        while std.ndim > mean.ndim and std.shape[0] == 1:
            std = std.squeeze(0)
        shape = list(mean.shape)
        check_std_shape(std.shape, shape)
        self.ops = ops_of_tensor(mean)
        self.mean = mean
        self.std = std if list(std.shape) == shape else self.ops.broadcast_to(std, shape)
        self.batch_shape = shape[:-1]

    @classmethod
    def from_log_std(cls, mean: Tensor, log_std: Tensor) -> DiagGaussian:
        """Build from the log of the standard deviation (as SAC-style policies output it)."""
        return cls(mean, log_std.exp())

    def rsample(self) -> Tensor:
        return self.mean + self.std * self.ops.randn_like(self.mean)

    def log_prob(self, value: Tensor) -> Tensor:
        z = (value - self.mean) / self.std
        return (-0.5 * z * z - self.std.log() - HALF_LOG_2PI).sum(-1)

    def entropy(self) -> Tensor:
        return (0.5 + HALF_LOG_2PI + self.std.log()).sum(-1)

    def kl(self, other: Distribution) -> Tensor:
        self._same_kind(other)
        assert isinstance(other, DiagGaussian)
        ratio = (self.std / other.std).square()
        shift = ((self.mean - other.mean) / other.std).square()
        return 0.5 * (ratio + shift - 1.0 - ratio.log()).sum(-1)

    def mode(self) -> Tensor:
        return self.mean


class TanhGaussian(Distribution):
    """``tanh`` of a diagonal Gaussian: actions in ``(-1, 1)``, as SAC's policy (Haarnoja 2018).

    ``log_prob`` includes the change-of-variables term ``-Σ log(1 − tanh(x)²)``, computed from the
    pre-squash sample as ``2·(log 2 − x − softplus(−2x))``, which stays finite where
    ``1 − tanh(x)²`` rounds to zero. Use :meth:`rsample_with_log_prob` in a loss: it takes the
    log-probability from the pre-squash sample instead of inverting ``tanh``. Map actions to an
    environment's bounds outside (e.g. ``parl.env.ActionMappingWrapper``).

    Args:
        mean: pre-squash mean ``[*batch, act_dim]``.
        std: pre-squash standard deviation, broadcastable to ``mean``.
    """

    # atanh is infinite at ±1; actions are pulled this far inside before inverting.
    EPS = TANH_EPS

    def __init__(self, mean: Tensor, std: Tensor) -> None:
        self.base = DiagGaussian(mean, std)
        self.ops = self.base.ops
        self.batch_shape = self.base.batch_shape

    @classmethod
    def from_log_std(cls, mean: Tensor, log_std: Tensor) -> TanhGaussian:
        """Build from the log of the pre-squash standard deviation."""
        return cls(mean, log_std.exp())

    def _log_prob_pre_squash(self, x: Tensor) -> Tensor:
        log_det = 2.0 * (LOG_2 - x - self.ops.softplus(-2.0 * x))
        return self.base.log_prob(x) - log_det.sum(-1)

    def rsample_with_log_prob(self) -> tuple[Tensor, Tensor]:
        """A reparameterised action and its log-probability, both with gradients."""
        x = self.base.rsample()
        return x.tanh(), self._log_prob_pre_squash(x)

    def rsample(self) -> Tensor:
        return self.base.rsample().tanh()

    def log_prob(self, value: Tensor) -> Tensor:
        """Log-density of actions in ``(-1, 1)`` (values at ±1 are pulled in by :attr:`EPS`)."""
        x = self.ops.clip(value, -1.0 + self.EPS, 1.0 - self.EPS).atanh()
        return self._log_prob_pre_squash(x)

    def entropy(self) -> Tensor:
        raise NotImplementedError(tanh_entropy_message())

    def kl(self, other: Distribution) -> Tensor:
        """``KL(self || other)``: that of the Gaussians, since ``tanh`` is a bijection."""
        self._same_kind(other)
        assert isinstance(other, TanhGaussian)
        return self.base.kl(other.base)

    def mode(self) -> Tensor:
        return self.base.mean.tanh()
