"""Return and advantage computations in numpy: discounted sums and GAE.

Two GAE entry points:

* :func:`calc_gae` is PARL's: one trajectory that ends with a bootstrap value.
* :func:`compute_gae` is for PPO rollouts of ``N`` vectorised environments over ``T`` steps,
  with episode boundaries inside the rollout (CleanRL's convention, see its docstring).
  :func:`bootstrap_truncated` prepares rewards so that truncated episodes are bootstrapped.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["bootstrap_truncated", "calc_discount_sum_rewards", "calc_gae", "compute_gae"]


def _float_array(name: str, value: ArrayLike) -> NDArray[np.floating]:
    array = np.asarray(value)
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise TypeError(f"{name} must be numeric, got an array of dtype {array.dtype}")
    return array.astype(np.result_type(array.dtype, np.float32), copy=False)


def _check_1d(name: str, array: NDArray[np.floating]) -> None:
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D (one trajectory), got shape {array.shape}; "
            "for [T, N] rollouts use compute_gae"
        )


def calc_discount_sum_rewards(rewards: ArrayLike, gamma: float) -> NDArray[np.floating]:
    """Discounted reward-to-go of one trajectory: ``out[t] = sum_k gamma**k * rewards[t+k]``.

    Args:
        rewards: 1-D rewards of one trajectory.
        gamma: the discount factor.

    Returns:
        An array shaped like ``rewards``.
    """
    rewards = _float_array("rewards", rewards)
    _check_1d("rewards", rewards)
    out = np.empty_like(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def calc_gae(
    rewards: ArrayLike, values: ArrayLike, next_value: float, gamma: float, lam: float
) -> NDArray[np.floating]:
    """Generalised advantage estimation for one trajectory (PARL's signature).

    ``delta[t] = rewards[t] + gamma * values[t+1] - values[t]`` with ``values[T] = next_value``
    (pass 0 when the trajectory terminated), and ``adv[t] = sum_k (gamma*lam)**k * delta[t+k]``.

    Args:
        rewards: 1-D rewards, length ``T``.
        values: 1-D value estimates of the visited states, length ``T``.
        next_value: value of the state after the last step.
        gamma: the discount factor.
        lam: the GAE lambda.

    Returns:
        The advantages, length ``T``.

    Raises:
        ValueError: if ``rewards`` and ``values`` are not 1-D arrays of equal length.
    """
    rewards = _float_array("rewards", rewards)
    values = _float_array("values", values)
    _check_1d("rewards", rewards)
    _check_1d("values", values)
    if rewards.shape != values.shape:
        raise ValueError(
            f"rewards and values must have the same length, got {rewards.shape} and {values.shape}"
        )
    values = np.append(values, next_value)
    deltas = rewards + gamma * values[1:] - values[:-1]
    return calc_discount_sum_rewards(deltas, gamma * lam)


def compute_gae(
    rewards: ArrayLike,
    values: ArrayLike,
    dones: ArrayLike,
    last_values: ArrayLike,
    last_dones: ArrayLike,
    gamma: float,
    lam: float,
) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
    """GAE over a rollout of ``N`` environments and ``T`` steps, with episode boundaries.

    Convention (CleanRL's): ``obs[t]`` is the observation the policy acted on at step ``t``;
    ``rewards[t]`` is the reward of that action; ``dones[t]`` is 1 when ``obs[t]`` is the first
    observation of a new episode, i.e. the step *before* ``t`` ended an episode (terminated or
    truncated) and the environment reset. ``last_values``/``last_dones`` are the same for the
    observation after the rollout (``obs[T]``). So the step at ``t`` ends its episode exactly
    when ``dones[t+1]`` is 1, and::

        nextnonterminal[t] = 1 - dones[t+1]           (1 - last_dones for t = T-1)
        delta[t] = rewards[t] + gamma * values[t+1] * nextnonterminal[t] - values[t]
        adv[t]   = delta[t] + gamma * lam * nextnonterminal[t] * adv[t+1]

    A truncated episode is thereby treated as terminated (value 0 after it); apply
    :func:`bootstrap_truncated` to ``rewards`` first to bootstrap it instead.

    Args:
        rewards: shape ``[T, N]`` (or ``[T]`` for one environment).
        values: value estimates of ``obs[t]``, shape of ``rewards``.
        dones: episode-start flags of ``obs[t]`` (0/1 or bool), shape of ``rewards``.
        last_values: value of ``obs[T]``, shape ``[N]`` (a scalar for ``[T]`` inputs).
        last_dones: episode-start flag of ``obs[T]``, shape ``[N]``.
        gamma: the discount factor.
        lam: the GAE lambda.

    Returns:
        ``(advantages, returns)``, both shaped like ``rewards``; ``returns = advantages + values``
        (the value-function targets).

    Raises:
        ValueError: if the shapes disagree.
    """
    rewards = _float_array("rewards", rewards)
    values = _float_array("values", values)
    dones = _float_array("dones", dones)
    last_values = _float_array("last_values", last_values)
    last_dones = _float_array("last_dones", last_dones)
    if rewards.ndim < 1:
        raise ValueError(
            f"rewards must have a leading time axis [T, ...], got shape {rewards.shape}"
        )
    for name, array in (("values", values), ("dones", dones)):
        if array.shape != rewards.shape:
            raise ValueError(
                f"{name} must have the shape of rewards {rewards.shape}, got {array.shape}"
            )
    for name, array in (("last_values", last_values), ("last_dones", last_dones)):
        if array.shape != rewards.shape[1:]:
            raise ValueError(
                f"{name} must have shape {rewards.shape[1:]} (rewards without the time axis), "
                f"got {array.shape}"
            )
    next_values = np.concatenate([values[1:], last_values[None]])
    next_nonterminal = 1.0 - np.concatenate([dones[1:], last_dones[None]])
    deltas = rewards + gamma * next_values * next_nonterminal - values
    advantages = np.empty_like(deltas)
    running = np.zeros_like(deltas[0])
    for t in range(len(deltas) - 1, -1, -1):
        running = deltas[t] + gamma * lam * next_nonterminal[t] * running
        advantages[t] = running
    return advantages, advantages + values


def bootstrap_truncated(
    rewards: ArrayLike,
    terminations: ArrayLike,
    truncations: ArrayLike,
    final_values: ArrayLike,
    gamma: float,
) -> NDArray[np.floating]:
    """Add ``gamma * V(final_obs)`` to the rewards of steps that truncated (not terminated).

    Gymnasium resets an environment that truncates, so :func:`compute_gae` sees an episode
    boundary there and would treat the time limit as a true end. Folding the discounted value
    of the final observation into that step's reward restores the bootstrap. All arrays are
    indexed by step, as returned by ``env.step`` at step ``t`` (not by observation).

    Args:
        rewards: shape ``[T, N]`` (or ``[T]``).
        terminations: ``terminated`` flags of each step, shape of ``rewards``.
        truncations: ``truncated`` flags of each step, shape of ``rewards``.
        final_values: value of the final observation of the episode that step ``t`` ended
            (``info["final_obs"]`` of a gymnasium vector env in ``AutoresetMode.SAME_STEP``);
            read only where a step truncated without terminating, so any finite value elsewhere.
        gamma: the discount factor.

    Returns:
        The corrected rewards, a new array.

    Raises:
        ValueError: if the shapes disagree.
    """
    rewards = _float_array("rewards", rewards)
    arrays = {
        "terminations": _float_array("terminations", terminations),
        "truncations": _float_array("truncations", truncations),
        "final_values": _float_array("final_values", final_values),
    }
    for name, array in arrays.items():
        if array.shape != rewards.shape:
            raise ValueError(
                f"{name} must have the shape of rewards {rewards.shape}, got {array.shape}"
            )
    bootstrap = (arrays["truncations"] != 0) & (arrays["terminations"] == 0)
    return np.where(bootstrap, rewards + gamma * arrays["final_values"], rewards)
