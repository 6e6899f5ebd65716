"""What PPO is on either backend: its hyperparameters, its statistics and its input rules.

:class:`~parl_algos_pg.ppo.PPO` (paddle) and :class:`parl_algos_pg.torch.PPO` share these, so
both take the same settings, report the same :class:`PPOStats` and refuse the same inputs in
the same words.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, NamedTuple

from parl.core.config import AlgorithmConfig

from pydantic import Field, NonNegativeFloat, PositiveFloat

__all__ = [
    "ADV_EPS",
    "CONTINUOUS_HINT",
    "DISCRETE_HINT",
    "PPOConfig",
    "PPOStats",
    "batch_shape_message",
    "check_lr",
    "check_minibatches",
    "fractional_action_message",
    "not_logits_message",
    "not_mean_std_message",
    "std_mismatch_message",
    "value_shape_message",
    "width_mismatch_message",
]

ADV_EPS = 1e-8
"""Added to the advantages' standard deviation when normalising them."""


class PPOConfig(AlgorithmConfig):
    """Hyperparameters of :class:`PPO` (PARL's names and defaults)."""

    clip_param: float = Field(default=0.1, gt=0.0, le=1.0)
    """Clip range ε of the probability ratio (and of the value change when clipping it)."""

    value_loss_coef: NonNegativeFloat = 0.5
    """Weight of the value loss in the total loss."""

    entropy_coef: NonNegativeFloat = 0.01
    """Weight of the entropy bonus (subtracted from the loss)."""

    initial_lr: PositiveFloat = 2.5e-4
    """Learning rate of Adam until ``learn(..., lr=...)`` sets another."""

    eps: PositiveFloat = 1e-5
    """Adam's epsilon."""

    max_grad_norm: PositiveFloat | None = 0.5
    """Gradients are rescaled so that their global L2 norm is at most this; None: no clipping."""

    use_clipped_value_loss: bool = True
    """Clip the value prediction to ``old_value ± clip_param`` in the value loss, as PPO2."""

    norm_adv: bool = True
    """Normalise advantages to zero mean and unit variance within each minibatch."""

    continuous_action: bool = False
    """Gaussian policy over a Box action space instead of a categorical one."""

    target_kl: PositiveFloat | None = None
    """``learn_epochs`` stops after the epoch whose mean ``approx_kl`` exceeds this; None: never."""


class PPOStats(NamedTuple):
    """What :meth:`PPO.learn_epochs` reports: means over the gradient steps it took."""

    value_loss: float
    """The value loss."""
    action_loss: float
    """The clipped surrogate loss."""
    entropy: float
    """The mean policy entropy."""
    approx_kl: float
    """``mean((ratio - 1) - log ratio)``: an unbiased, non-negative estimate of
    KL(old policy ‖ new policy) on the minibatch (Schulman's k3 estimator, as CleanRL)."""
    clip_fraction: float
    """The fraction of samples whose probability ratio left ``[1 - ε, 1 + ε]``."""
    explained_variance: float
    """``1 - Var(returns - old values) / Var(returns)`` of the rollout: 1 is a perfect value
    function, 0 no better than a constant, nan when the returns do not vary."""
    epochs: int
    """Epochs run: fewer than asked when ``target_kl`` stopped the loop."""


DISCRETE_HINT = (
    "this PPO has continuous_action=False; build it with continuous_action=True for a Box "
    "action space, or cast discrete actions with .astype('int64')"
)
"""Appended to the error for float actions given to a discrete PPO."""

CONTINUOUS_HINT = (
    "this PPO has continuous_action=True and needs float actions [B, act_dim]; build it "
    "with continuous_action=False for a Discrete action space"
)
"""Appended to the error for integer actions given to a continuous PPO."""


def check_lr(lr: Any) -> float | None:
    """PARL's ``if lr: set_lr(lr)``: the rate to set, or None where ``None``/``0`` keep it.

    Raises:
        ValueError: ``lr`` is not a non-negative number.
    """
    if lr is None:
        return None
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not float(lr) >= 0:
        raise ValueError(
            f"lr must be a non-negative number or None, got {lr!r} (None and 0 keep the "
            "optimizer's current rate)"
        )
    return float(lr) if float(lr) > 0 else None


def check_minibatches(batch: int, num_minibatches: int, where: str) -> int:
    """The minibatch size; raises unless ``num_minibatches`` divides the rollout."""
    if batch % num_minibatches:
        raise ValueError(
            f"{where}: the rollout has {batch} samples, which does not split into "
            f"{num_minibatches} equal minibatches; pick num_minibatches dividing {batch}"
        )
    return batch // num_minibatches


def fractional_action_message(where: str, bad: Any, hint: str) -> str:
    """Why a float batch of discrete actions with a fractional value is refused."""
    return (
        f"{where}: discrete actions must be whole numbers, got {bad!r} in a float "
        f"batch; pass the sampled action indices (ints, or floats such as 3.0); {hint}"
    )


def not_logits_message(where: str, out: Sequence[Any]) -> str:
    """Why a discrete PPO refuses a policy that returned a tuple."""
    return (
        f"{where}: with continuous_action=False, model.policy must return logits, got a "
        f"{type(out).__name__} of {len(out)}; pass continuous_action=True for a "
        "Gaussian policy returning (mean, std)"
    )


def not_mean_std_message(where: str, out: Any) -> str:
    """Why a continuous PPO refuses a policy that did not return ``(mean, std)``."""
    return (
        f"{where}: with continuous_action=True, model.policy must return "
        f"(mean, std), got {type(out).__name__}; return logits only with "
        "continuous_action=False"
    )


def std_mismatch_message(where: str, mean: Sequence[int], std: Sequence[int]) -> str:
    """Why a continuous PPO refuses a std that does not broadcast to the mean."""
    return (
        f"{where}: model.policy returned mean {list(mean)} and std {list(std)}, which do not "
        "broadcast (std may be [act_dim], [1, act_dim] or the mean's shape)"
    )


def width_mismatch_message(where: str, given: int, width: int) -> str:
    """Why continuous actions of another width than the policy's mean are refused."""
    return (
        f"{where}: actions have {given} dimensions but model.policy returns a {width}-dimensional "
        "mean"
    )


def value_shape_message(where: str, shape: Sequence[int], batch: int) -> str:
    """Why ``model.value`` output of the wrong shape is refused."""
    return f"{where}: model.value returned {list(shape)}, expected [{batch}] or [{batch}, 1]"


def batch_shape_message(where: str, shape: Sequence[int], batch: int) -> str:
    """Why a policy giving another number of distributions than observations is refused."""
    return (
        f"{where}: model.policy gives one action distribution per entry of {list(shape)}, "
        f"expected [{batch}] for {batch} observations"
    )
