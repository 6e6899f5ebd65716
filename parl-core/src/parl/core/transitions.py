"""A batch of transitions, the named type off-policy update rules read, checked once for both
frameworks.

``learn(obs, action, reward, next_obs, terminal)`` takes numpy arrays or tensors, as PARL 2.x's
do; :func:`as_transitions` converts them with the algorithm's ops, checks every shape against
the batch size (a ``[B]`` reward never broadcasts against a ``[B, 1]`` value) and moves them to
the algorithm's device, so the update rule reads ``batch.reward`` instead of ``tensors[2]``.
This module imports neither framework.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parl.core.ops import Tensor

__all__ = ["Transitions", "as_transitions"]


@dataclass(frozen=True)
class Transitions:
    """One batch of ``B`` transitions ``(s, a, r, s', terminal)`` as tensors on one device.

    Attributes:
        obs: float32 ``[B, *obs_shape]``.
        action: int64 ``[B]`` (discrete) or float32 ``[B, act_dim]`` (continuous).
        reward: float32 ``[B]``.
        next_obs: float32, shaped like ``obs``.
        terminal: float32 ``[B]``: 1 where the episode terminated (not where it was truncated).
    """

    obs: Tensor
    action: Tensor
    reward: Tensor
    next_obs: Tensor
    terminal: Tensor


def as_transitions(
    algorithm: Any,
    obs: Any,
    action: Any,
    reward: Any,
    next_obs: Any,
    terminal: Any,
    *,
    continuous: bool = False,
) -> Transitions:
    """Convert and check a ``learn`` batch for ``algorithm`` and move it to its device.

    Args:
        algorithm: a :class:`parl.core.neutral.Algorithm` (its ``ops`` and ``device``).
        continuous: the actions are float ``[B, act_dim]`` (``[B]`` is read as ``[B, 1]``),
            not integers.

    Raises:
        ValueError: a shape does not fit the batch (the message names the input and shapes).
        TypeError: float discrete actions or integer continuous ones.
    """
    ops, where = algorithm.ops, f"{type(algorithm).__name__}.learn"
    obs = ops.as_batch_obs(obs, where)
    next_obs = ops.as_batch_obs(next_obs, where, "next_obs")
    if list(obs.shape) != list(next_obs.shape):
        raise ValueError(
            f"{where} needs obs and next_obs of the same shape [batch, *obs_shape], "
            f"got {list(obs.shape)} and {list(next_obs.shape)}"
        )
    size = obs.shape[0]
    as_actions = ops.as_batch_continuous_actions if continuous else ops.as_batch_actions
    tensors = (
        obs,
        as_actions(action, size, where),
        ops.as_batch_vector(reward, size, "reward", where),
        next_obs,
        ops.as_batch_vector(terminal, size, "terminal", where),
    )
    return Transitions(*(ops.move(tensor, algorithm.device) for tensor in tensors))
