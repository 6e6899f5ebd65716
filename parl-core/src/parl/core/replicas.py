"""What an update rule asks of a data-parallel group, whichever framework runs it.

A data-parallel learner runs the same algorithm in N processes, each on its own rows of the
batch; after each backward pass the processes combine their gradients, so that every copy takes
the step one process would take on all the rows. An algorithm written once reaches the group
through its ``replicas`` attribute (None: this process alone): ``ops.step(...,
replicas=self.replicas)`` combines the gradients, and :func:`replica_sum` adds a statistic over
the processes where the rule needs one of the whole batch (PPO's advantage normalisation).
:class:`parl.core.torch.data_parallel.DataParallel` is the torch group. This module imports
neither framework.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

__all__ = ["BatchReduction", "Replicas", "replica_count", "replica_sum"]

BatchReduction = Literal["mean", "sum"]
"""How an algorithm's loss reduces over a batch's rows (its ``batch_reduction``)."""


class Replicas(Protocol):
    """The processes of a data-parallel learner, as an algorithm sees them."""

    size: int
    """How many processes learn together (each on its own rows)."""

    def reduce_gradients(self, optimizer: Any) -> None:
        """Combine the gradients of ``optimizer``'s parameters over the processes, in place."""

    def sum(self, tensor: Any) -> Any:
        """``tensor`` added up over the processes (a new tensor; no gradient flows through)."""


def replica_sum(replicas: Replicas | None, tensor: Any) -> Any:
    """``tensor`` added up over ``replicas``; ``tensor`` itself when there are none."""
    return tensor if replicas is None else replicas.sum(tensor)


def replica_count(replicas: Replicas | None) -> int:
    """How many processes learn together: 1 without ``replicas``."""
    return 1 if replicas is None else replicas.size
