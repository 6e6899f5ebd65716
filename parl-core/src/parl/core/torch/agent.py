"""``parl.Agent`` on torch: numpy in, tensors on the agent's device to the algorithm, numpy out."""

from __future__ import annotations

from typing import Any, ClassVar

from parl.core.backend import Backend
from parl.core.base import AgentBase, AlgorithmBase
from parl.core.torch.algorithm import Algorithm
from parl.core.torch.backend import BACKEND
from parl.core.torch.tensors import to_numpy

import numpy as np
import torch
from numpy.typing import ArrayLike

__all__ = ["Agent"]


class Agent(AgentBase):
    """Base class of agents on torch: numpy in, tensors to the algorithm, numpy out.

    As the paddle ``parl.Agent`` (PARL 2.x's weight exchange, one-model ``save``/``restore``,
    atomic training checkpoints that are validated in full before anything is applied,
    train/eval switching), plus a device: ``device="cuda"`` moves every model of the algorithm
    to the GPU, and :meth:`to_tensor` / :meth:`to_numpy` are the one place where data crosses
    between numpy and the device.

    Args:
        algorithm: the ``parl.core.torch.Algorithm`` this agent drives.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:<index>"`` or a ``torch.device``; ``None`` keeps
            the algorithm where it is (on the CPU unless moved).

    Raises:
        ValueError: ``device`` is not usable here (``"cuda"`` without a GPU or on a CPU build
            of torch); the message says what to install or pass instead.
    """

    backend: ClassVar[Backend] = BACKEND
    algorithm_class: ClassVar[type[AlgorithmBase]] = Algorithm
    alg: Any

    def __init__(self, algorithm: Algorithm, device: str | torch.device | None = None) -> None:
        super().__init__(algorithm)
        if device is not None:
            algorithm.to(device)

    @property
    def device(self) -> torch.device:
        """Where the algorithm's models live; setting it moves them (and the optimizers), as
        PARL 2.x's torch agents' ``self.device = torch.device(...)`` expects."""
        device: torch.device = self.alg.device
        return device

    @device.setter
    def device(self, device: str | torch.device) -> None:
        self.alg.to(device)

    def to_tensor(self, value: ArrayLike, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """``value`` (numpy or anything ``numpy.asarray`` takes) as a tensor on the device."""
        if isinstance(value, torch.Tensor):
            return value.to(self.device, dtype)
        array = np.asarray(value)
        return torch.as_tensor(array, dtype=dtype, device=self.device)

    @staticmethod
    def to_numpy(tensor: torch.Tensor) -> np.ndarray:
        """A tensor's values as a numpy array on the host."""
        return to_numpy(tensor)
