"""The hyperparameters of DDPG and SAC and the batch rules they share, on either backend.

:class:`~parl_algos_ac.sac.SAC` (paddle) and :class:`parl_algos_ac.torch.SAC` take the same
:class:`SACConfig`, and refuse the same batches in the same words.
"""

from __future__ import annotations

from typing import Any, Literal

from parl.core.config import AlgorithmConfig

import numpy as np
from pydantic import Field, PositiveFloat

__all__ = ["DDPGConfig", "SACConfig", "check_unit_actions", "q_shape_message"]


class DDPGConfig(AlgorithmConfig):
    """Hyperparameters of :class:`DDPG` (PARL's names; defaults of PARL's examples)."""

    gamma: float = Field(default=0.99, gt=0.0, le=1.0)
    """Discount factor of future rewards, in (0, 1]."""

    tau: float = Field(default=0.005, gt=0.0, le=1.0)
    """Rate of the soft target update ``target = (1 - tau)·target + tau·model``."""

    actor_lr: PositiveFloat = 1e-3
    """Learning rate of the actor's Adam optimizer."""

    critic_lr: PositiveFloat = 1e-3
    """Learning rate of the critic's Adam optimizer."""


class SACConfig(DDPGConfig):
    """Hyperparameters of :class:`SAC`: PARL's, plus automatic entropy tuning."""

    actor_lr: float = Field(default=3e-4, gt=0.0)
    """Learning rate of the actor's Adam optimizer."""

    critic_lr: float = Field(default=3e-4, gt=0.0)
    """Learning rate of the critics' Adam optimizer."""

    alpha: PositiveFloat | Literal["auto"] = 0.2
    """Entropy temperature α; ``"auto"`` learns it so that the policy's entropy tracks
    ``target_entropy`` (PARL 2.x had only a fixed α)."""

    initial_alpha: PositiveFloat = 1.0
    """The starting α with ``alpha="auto"``."""

    alpha_lr: PositiveFloat | None = None
    """Learning rate of α's Adam optimizer with ``alpha="auto"``; None uses ``actor_lr``."""

    target_entropy: float | None = None
    """The entropy α is tuned towards; None means ``-act_dim`` (Haarnoja et al.'s heuristic)."""


def check_unit_actions(action: Any, where: str) -> None:
    """Refuse numpy float actions outside ``[-1, 1]`` (a tensor is not read back: no sync)."""
    array = np.asarray(action)
    if array.size and np.issubdtype(array.dtype, np.floating):
        low, high = float(array.min()), float(array.max())
        if low < -1.0 or high > 1.0:
            raise ValueError(
                f"{where}: actions must lie in [-1, 1], got values in [{low:.3g}, "
                f"{high:.3g}]; store the agent's actions before ActionMappingWrapper "
                "maps them onto the environment's bounds"
            )


def q_shape_message(where: str, batch: int, got: Any) -> str:
    """Why what ``model.value(obs, act)`` returned is refused."""
    return (
        f"{where}: model.value(obs, act) must return Q values [{batch}], [{batch}, 1], a tuple "
        f"of those or [num_critics, {batch}], got {got}"
    )
