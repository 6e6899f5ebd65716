"""Optimizers over one flat float32 parameter vector: SGD, Momentum and Adam.

They minimise: ``step(params, grad)`` returns ``params`` moved against ``grad``. An ES learner
passes the negative of its return gradient plus the weight decay (Salimans et al. 2017 used Adam;
PARL's ES example and EvoKit offer the same three). Their state is a few named vectors and a step
count, which :meth:`FlatOptimizer.state` and :meth:`FlatOptimizer.load_state` exchange as plain
arrays so that checkpoints and solver files hold them without pickling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from parl.core.validation import non_negative_int, positive_int

import numpy as np

__all__ = ["SGD", "Adam", "FlatOptimizer", "Momentum", "OptimizerName", "make_optimizer"]

OptimizerName = Literal["sgd", "momentum", "adam"]


class FlatOptimizer:
    """Base class: a stateful first-order optimizer of a ``dim``-vector.

    Subclasses name their state vectors in :attr:`slot_names` and implement :meth:`_update`.

    Args:
        dim: length of the parameter vector.
        stepsize: the learning rate, > 0.
    """

    slot_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, dim: int, stepsize: float) -> None:
        if not stepsize > 0:
            raise ValueError(f"stepsize must be > 0, got {stepsize!r}")
        self.dim = positive_int("dim", dim)
        self.stepsize = float(stepsize)
        self.steps = 0
        self.slots = {name: np.zeros(self.dim, dtype=np.float32) for name in self.slot_names}

    def step(self, params: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """Return the parameters after one step against ``grad`` (both ``[dim]``)."""
        for name, value in (("params", params), ("grad", grad)):
            if np.shape(value) != (self.dim,):
                raise ValueError(
                    f"{name} must have shape ({self.dim},), got {np.shape(value)}; pass the flat "
                    "parameter vector this optimizer was built for"
                )
        self.steps += 1
        update = self._update(np.asarray(grad, dtype=np.float32))
        return (np.asarray(params, dtype=np.float32) - update).astype(np.float32)

    def _update(self, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def state(self) -> tuple[dict[str, np.ndarray], int]:
        """A copy of the state vectors by name, and the number of steps taken."""
        return {name: value.copy() for name, value in self.slots.items()}, self.steps

    def load_state(self, slots: Mapping[str, np.ndarray], steps: int) -> None:
        """Replace the state with ``slots`` and ``steps``, after checking all of it.

        Raises:
            ValueError: see :meth:`check_state`; nothing changes then.
        """
        self.check_state(slots, steps)
        self.slots = {name: np.array(value, dtype=np.float32) for name, value in slots.items()}
        self.steps = int(steps)

    def check_state(self, slots: Mapping[str, np.ndarray], steps: int) -> None:
        """Refuse a state this optimizer cannot step from.

        Raises:
            ValueError: a slot is missing, unknown, of the wrong shape or not finite (or, for
                Adam's ``v``, negative), or ``steps`` is not an int in ``[0, 2**63)``.
        """
        if set(slots) != set(self.slot_names):
            raise ValueError(
                f"{type(self).__name__} state holds {sorted(self.slot_names)}, got "
                f"{sorted(slots)}; was it saved by another optimizer?"
            )
        for name, value in slots.items():
            if np.shape(value) != (self.dim,):
                raise ValueError(
                    f"optimizer slot {name!r} must have shape ({self.dim},), got {np.shape(value)}"
                )
            if not np.isfinite(np.asarray(value, dtype=np.float32)).all():
                raise ValueError(f"optimizer slot {name!r} holds NaN or infinite values")
        if non_negative_int("optimizer steps", steps) >= 2**63:
            raise ValueError(f"optimizer steps must be below 2**63, got {steps}")


class SGD(FlatOptimizer):
    """Plain gradient descent: ``θ ← θ − α·g``."""

    def _update(self, grad: np.ndarray) -> np.ndarray:
        return self.stepsize * grad


class Momentum(FlatOptimizer):
    """Gradient descent with momentum as an average: ``v ← μ·v + (1 − μ)·g``, ``θ ← θ − α·v``.

    This is the form of Salimans et al.'s and EvoKit's momentum SGD.

    Args:
        dim: length of the parameter vector.
        stepsize: the learning rate α.
        momentum: μ in ``[0, 1)``.
    """

    slot_names = ("velocity",)

    def __init__(self, dim: int, stepsize: float, momentum: float = 0.9) -> None:
        super().__init__(dim, stepsize)
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
        self.momentum = float(momentum)

    def _update(self, grad: np.ndarray) -> np.ndarray:
        velocity = self.momentum * self.slots["velocity"] + (1 - self.momentum) * grad
        self.slots["velocity"] = velocity.astype(np.float32)
        return self.stepsize * self.slots["velocity"]


class Adam(FlatOptimizer):
    """Adam (Kingma & Ba 2015) with the bias correction folded into the step size.

    ``m ← β₁m + (1 − β₁)g``, ``v ← β₂v + (1 − β₂)g²``,
    ``θ ← θ − α·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m/(√v + ε)``.
    """

    slot_names = ("m", "v")

    def __init__(
        self,
        dim: int,
        stepsize: float,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
    ) -> None:
        super().__init__(dim, stepsize)
        for name, beta in (("beta1", beta1), ("beta2", beta2)):
            if not 0 <= beta < 1:
                raise ValueError(f"{name} must be in [0, 1), got {beta!r}")
        if not epsilon > 0:
            raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)

    def check_state(self, slots: Mapping[str, np.ndarray], steps: int) -> None:
        """As :meth:`FlatOptimizer.check_state`; the second moment ``v`` must also be >= 0
        (its square root divides the step)."""
        super().check_state(slots, steps)
        if (np.asarray(slots["v"]) < 0).any():
            raise ValueError("Adam's second moment 'v' must be >= 0; the state is damaged")

    def _update(self, grad: np.ndarray) -> np.ndarray:
        t = self.steps
        rate = self.stepsize * np.sqrt(1 - self.beta2**t) / (1 - self.beta1**t)
        m = self.beta1 * self.slots["m"] + (1 - self.beta1) * grad
        v = self.beta2 * self.slots["v"] + (1 - self.beta2) * grad * grad
        self.slots["m"], self.slots["v"] = m.astype(np.float32), v.astype(np.float32)
        return rate * self.slots["m"] / (np.sqrt(self.slots["v"]) + self.epsilon)


def make_optimizer(
    name: OptimizerName,
    dim: int,
    stepsize: float,
    *,
    momentum: float = 0.9,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
) -> FlatOptimizer:
    """Build the optimizer called ``name`` (``"sgd"``, ``"momentum"`` or ``"adam"``)."""
    if name == "sgd":
        return SGD(dim, stepsize)
    if name == "momentum":
        return Momentum(dim, stepsize, momentum)
    if name == "adam":
        return Adam(dim, stepsize, beta1, beta2, epsilon)
    raise ValueError(f"unknown optimizer {name!r}; choose 'sgd', 'momentum' or 'adam'")
