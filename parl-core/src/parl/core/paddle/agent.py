"""``parl.Agent`` on paddle: numpy in, tensors to the algorithm, numpy out."""

from __future__ import annotations

from typing import Any, ClassVar

from parl.core.backend import Backend
from parl.core.base import WEIGHTS_FORMAT, AgentBase
from parl.core.paddle.algorithm import Algorithm
from parl.core.paddle.backend import BACKEND

__all__ = ["WEIGHTS_FORMAT", "Agent"]


class Agent(AgentBase):
    """Base class of agents on paddle: numpy in, tensors to the algorithm, numpy out.

    Subclasses implement :meth:`learn`, :meth:`predict` and :meth:`sample` for their data
    layout. The base class gives PARL 2.x's weight exchange (for distributed actors) and
    one-model :meth:`save` / :meth:`restore`, full training checkpoints
    (:meth:`save_checkpoint` / :meth:`load_checkpoint`), inference-model export
    (``paddle.jit.save``) and train/eval switching of every model the algorithm holds. Every
    file is written atomically and read without running code from it.

    Args:
        algorithm: the :class:`~parl.Algorithm` this agent drives.
    """

    backend: ClassVar[Backend] = BACKEND
    alg: Any

    def __init__(self, algorithm: Algorithm) -> None:
        super().__init__(algorithm)
