"""V-trace off-policy value targets (Espeholt et al., 2018, "IMPALA", eq. 1), PARL 2.x's API.

For a trajectory of ``T`` steps with behaviour policy μ and target policy π, importance weights
``ρ_t = π(a_t|x_t) / μ(a_t|x_t)`` and truncated weights ``ρ̄_t = min(ρ̄, ρ_t)``,
``c_t = min(1, ρ_t)``, the n-step V-trace target is::

    v_s = V(x_s) + Σ_{t≥s} (Π_{i=s}^{t-1} γ_i c_i) · δ_t,
    δ_t = ρ̄_t (r_t + γ_t V(x_{t+1}) - V(x_t))

computed backwards as ``v_s - V(x_s) = δ_s + γ_s c_s (v_{s+1} - V(x_{s+1}))``. The policy
gradient advantage is ``ρ̄^pg_s (r_s + γ_s v_{s+1} - V(x_s))`` with ``ρ̄^pg_s = min(ρ̄_pg, ρ_s)``.
``γ_t`` is the per-step discount (0 where the episode ended after step ``t``). Written once for
paddle and torch: it runs on the ops of the tensors it is given (:mod:`parl.core.ops`).
"""

from __future__ import annotations

from typing import NamedTuple

from parl.core.ops import Tensor, ops_of_tensor

__all__ = ["VTraceReturns", "from_importance_weights"]


class VTraceReturns(NamedTuple):
    """V-trace results, both ``[T, B]`` and without gradient."""

    vs: Tensor
    """The V-trace value targets ``v_s``."""
    pg_advantages: Tensor
    """The policy-gradient advantages ``ρ̄^pg_s (r_s + γ_s v_{s+1} - V(x_s))``."""


def _check_shapes(tensors: dict[str, Tensor], bootstrap_value: Tensor) -> None:
    shape = list(tensors["values"].shape)
    if len(shape) < 1:
        raise ValueError("from_importance_weights: values must be [T, B], got a scalar")
    for name, tensor in tensors.items():
        if list(tensor.shape) != shape:
            raise ValueError(
                f"from_importance_weights: {name} has shape {list(tensor.shape)} but values has "
                f"{shape}; every per-step input must be [T, B] (time first)"
            )
    if list(bootstrap_value.shape) != shape[1:]:
        raise ValueError(
            f"from_importance_weights: bootstrap_value must have shape {shape[1:]} (the value "
            f"of the observation after the last step), got {list(bootstrap_value.shape)}"
        )


def _check_threshold(name: str, value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"from_importance_weights: {name}={value!r} must be > 0 or None")


def from_importance_weights(
    behaviour_actions_log_probs: Tensor,
    target_actions_log_probs: Tensor,
    discounts: Tensor,
    rewards: Tensor,
    values: Tensor,
    bootstrap_value: Tensor,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
) -> VTraceReturns:
    """V-trace targets and policy-gradient advantages from log-probabilities (PARL 2.x's API).

    Args:
        behaviour_actions_log_probs: ``log μ(a_t|x_t)``, ``[T, B]``.
        target_actions_log_probs: ``log π(a_t|x_t)``, ``[T, B]``.
        discounts: ``γ_t``, ``[T, B]``: the discount after step ``t`` (0 where it ended an
            episode).
        rewards: ``r_t``, ``[T, B]``.
        values: ``V(x_t)``, ``[T, B]``.
        bootstrap_value: ``V(x_T)``, ``[B]``: the value of the observation after the last step.
        clip_rho_threshold: ``ρ̄``, the truncation of the weights in the value targets;
            None: no clipping.
        clip_pg_rho_threshold: ``ρ̄_pg``, the truncation of the weights in the advantages;
            None: no clipping.

    Returns:
        ``VTraceReturns(vs, pg_advantages)``, ``[T, B]`` each, with no gradient (as PARL's:
        they are targets).

    Raises:
        ValueError: the shapes disagree, or a threshold is not positive.

    Examples:
        >>> import paddle  # or torch: the same call on torch tensors
        >>> zeros = paddle.zeros([3, 2])
        >>> out = from_importance_weights(zeros, zeros, paddle.full([3, 2], 0.9),
        ...                               paddle.ones([3, 2]), zeros, paddle.zeros([2]))
        >>> [round(v, 2) for v in out.vs[:, 0].tolist()]
        [2.71, 1.9, 1.0]
    """
    _check_threshold("clip_rho_threshold", clip_rho_threshold)
    _check_threshold("clip_pg_rho_threshold", clip_pg_rho_threshold)
    per_step = {
        "behaviour_actions_log_probs": behaviour_actions_log_probs,
        "target_actions_log_probs": target_actions_log_probs,
        "discounts": discounts,
        "rewards": rewards,
        "values": values,
    }
    _check_shapes(per_step, bootstrap_value)
    ops = ops_of_tensor(values)
    with ops.no_grad():
        rhos = (target_actions_log_probs - behaviour_actions_log_probs).detach().exp()
        clipped_rhos = (
            rhos if clip_rho_threshold is None else ops.clip(rhos, high=clip_rho_threshold)
        )
        cs = ops.clip(rhos, high=1.0)
        values, bootstrap_value = values.detach(), bootstrap_value.detach()
        next_values = ops.concat([values[1:], bootstrap_value.unsqueeze(0)], axis=0)
        deltas = clipped_rhos * (rewards + discounts * next_values - values)
        decay = discounts * cs
        # v_s - V(x_s) = δ_s + γ_s c_s (v_{s+1} - V(x_{s+1})), from the last step backwards.
        running = deltas[-1]
        corrections = [running]
        for t in range(values.shape[0] - 2, -1, -1):
            running = deltas[t] + decay[t] * running
            corrections.append(running)
        vs = ops.stack(corrections[::-1], axis=0) + values
        next_vs = ops.concat([vs[1:], bootstrap_value.unsqueeze(0)], axis=0)
        pg_rhos = (
            rhos if clip_pg_rho_threshold is None else ops.clip(rhos, high=clip_pg_rho_threshold)
        )
        pg_advantages = pg_rhos * (rewards + discounts * next_vs - values)
    return VTraceReturns(vs=vs, pg_advantages=pg_advantages)
