"""EpisodeTensors: a padded episode batch (an :class:`~parl_algos_marl.EpisodeBatch`'s seven
arrays) checked and converted to tensors, for the learners that unroll whole episodes."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from parl.core.ops import Tensor

import numpy as np

__all__ = ["EpisodeTensors"]


@dataclass(frozen=True)
class EpisodeTensors:
    """A checked episode batch of ``B`` episodes padded to ``T`` rows.

    Row ``t`` holds what was seen at step ``t`` and the actions, reward and termination of the
    transition from it; transitions are the first ``T - 1`` rows. ``mask`` is 1 for a
    transition that is neither padding nor after its episode's termination (the terminating
    transition itself counts).
    """

    state: Tensor
    """``[B, T, state_dim]``."""
    obs: Tensor
    """``[B, T, n_agents, obs_dim]``."""
    actions: Tensor
    """``[B, T, n_agents]`` int64, every row (the last may hold the actions picked at the final
    observation, for critics of joint actions)."""
    reward: Tensor
    """``[B, T - 1, 1]``."""
    terminated: Tensor
    """``[B, T - 1, 1]``."""
    unavailable: Tensor
    """``[B, T, n_agents, n_actions]``, 1 where an action is not allowed."""
    mask: Tensor
    """``[B, T - 1, 1]``."""

    @classmethod
    def check(
        cls,
        ops: ModuleType,
        device: Any,
        n_agents: int,
        batch: tuple[Any, ...],
        where: str,
        n_actions: int | None = None,
        agents_from: str = "n_agents",
    ) -> EpisodeTensors:
        """Convert ``(state, actions, reward, terminated, obs, available_actions, filled)``
        (``filled`` 1 on padding, PARL's convention) and check every shape and mask.

        Args:
            n_agents: the agents the learner was built for.
            where: the method named in errors (``"QMIX.learn"``).
            n_actions: the actions per agent the learner was built for; when given, the
                available-actions width and every action index are checked against it.
            agents_from: where ``n_agents`` comes from, for errors (``"qmixer_model.n_agents"``).

        Raises:
            ValueError: a shape, mask or action that does not fit, naming the argument.
        """
        state, actions, reward, terminated, obs, available, filled = batch
        state_t = ops.to_tensor(state, "float32", device)
        obs_t = ops.to_tensor(obs, "float32", device)
        if state_t.ndim != 3 or obs_t.ndim != 4 or state_t.shape[1] < 2:
            raise ValueError(
                f"{where}: state_batch must be [B, T, state_dim] and obs_batch [B, T, n_agents, "
                f"obs_dim] with T >= 2, got {list(state_t.shape)} and {list(obs_t.shape)}"
            )
        size, steps = state_t.shape[0], state_t.shape[1]
        if list(obs_t.shape[:3]) != [size, steps, n_agents]:
            raise ValueError(
                f"{where}: obs_batch must be [{size}, {steps}, {n_agents}, obs_dim] for "
                f"{n_agents} agents ({agents_from}), got {list(obs_t.shape)}"
            )
        actions_t = ops.to_tensor(actions, "int64", device)
        available_t = ops.to_tensor(available, "float32", device)
        if list(actions_t.shape) != [size, steps, n_agents]:
            raise ValueError(
                f"{where}: actions_batch must be [{size}, {steps}, {n_agents}], got "
                f"{list(actions_t.shape)}"
            )
        width = "n_actions" if n_actions is None else str(n_actions)
        if (
            available_t.ndim != 4
            or list(available_t.shape[:3]) != [size, steps, n_agents]
            or (n_actions is not None and available_t.shape[3] != n_actions)
        ):
            raise ValueError(
                f"{where}: available_actions_batch must be [{size}, {steps}, {n_agents}, "
                f"{width}], got {list(available_t.shape)}"
            )
        columns = {
            name: _column(ops.to_tensor(value, "float32", device), size, steps, name, where)
            for name, value in (
                ("reward_batch", reward),
                ("terminated_batch", terminated),
                ("filled_batch", filled),
            )
        }
        _check_host_values(actions, terminated, filled, n_actions, (size, steps), where)
        filled_t, terminated_t = columns["filled_batch"], columns["terminated_batch"]
        # A transition counts unless it is padding or its episode terminated before it.
        ended_before = ops.cumsum(terminated_t, axis=1) - terminated_t
        mask = (1.0 - filled_t) * ops.to_tensor(ended_before == 0, "float32")
        return cls(
            state=state_t,
            obs=obs_t,
            actions=actions_t,
            reward=columns["reward_batch"][:, :-1],
            terminated=terminated_t[:, :-1],
            unavailable=ops.to_tensor(available_t == 0, "float32"),
            mask=mask[:, :-1],
        )


def _check_host_values(
    actions: Any,
    terminated: Any,
    filled: Any,
    n_actions: int | None,
    shape: tuple[int, int],
    where: str,
) -> None:
    """Refuse actions out of range, flags other than 0/1 and masks that leave no transition,
    reading host data (numpy arrays, lists) only: reading a tensor's values back would make
    the host wait for the device on every update, so a tensor is trusted for its values."""
    host = (np.ndarray, list, tuple)
    if n_actions is not None and isinstance(actions, host):
        given = np.asarray(actions)
        if ((given < 0) | (given >= n_actions)).any():
            raise ValueError(f"{where}: actions_batch must hold actions in [0, {n_actions})")
    if not (isinstance(terminated, host) and isinstance(filled, host)):
        return
    flags = {}
    for name, value in (("terminated_batch", terminated), ("filled_batch", filled)):
        flags[name] = np.asarray(value, np.float32).reshape(shape)
        if ((flags[name] != 0) & (flags[name] != 1)).any():
            raise ValueError(f"{where}: {name} must hold 0 or 1 only")
    ended = flags["terminated_batch"]
    counted = (1.0 - flags["filled_batch"]) * ((np.cumsum(ended, axis=1) - ended) == 0)
    if not counted[:, :-1].any():
        raise ValueError(
            f"{where}: the masks leave no transition to learn from (filled_batch marks "
            "padding with 1: is every step marked as padding?)"
        )


def _column(tensor: Tensor, size: int, steps: int, name: str, where: str) -> Tensor:
    """A ``[B, T, 1]`` or ``[B, T]`` float32 input as ``[B, T, 1]``."""
    given = list(tensor.shape)
    if tensor.ndim == 2:
        tensor = tensor.unsqueeze(-1)
    if list(tensor.shape) != [size, steps, 1]:
        raise ValueError(
            f"{where}: {name} must be [{size}, {steps}, 1] to match state_batch, got {given}"
        )
    return tensor
