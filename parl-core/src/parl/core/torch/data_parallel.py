"""A data-parallel learner on torch: one process per GPU, gradients combined after each backward.

Each process of a ``torch.distributed`` group (``torchrun --nproc-per-node N``: one per GPU)
holds the same algorithm and learns on its own B/N rows of every batch. :class:`DataParallel`
makes the copies start equal (rank 0's weights) and becomes the algorithm's ``replicas``
(:mod:`parl.core.replicas`): after each backward pass ``ops.step`` has it combine the gradients
in one all-reduce per step, averaged for a mean loss and added for a summed one, so every copy
takes the step that one process would take on all B rows. This is what torch's
``DistributedDataParallel`` does, without wrapping the model: the update rule, written once,
stays the one that runs on one device.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Iterator
from typing import Any, TypeVar

from parl.core.replicas import BatchReduction

import torch
import torch.distributed as dist

__all__ = ["DataParallel", "process_group"]

Rows = TypeVar("Rows")

_REDUCTIONS: tuple[BatchReduction, ...] = ("mean", "sum")


@contextlib.contextmanager
def process_group(
    backend: str | None = None, *, init_method: str = "env://", timeout_s: float = 300.0
) -> Iterator[torch.device]:
    """Join the process group that ``torchrun`` describes; leave it on exit.

    Reads ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` (and, for ``env://``, ``MASTER_ADDR`` and
    ``MASTER_PORT``) as ``torchrun`` sets them.

    Args:
        backend: ``"nccl"`` or ``"gloo"``; None: nccl where CUDA is, else gloo.
        init_method: where the processes meet: ``"env://"`` (torchrun's) or
            ``"file:///a/shared/file"``.
        timeout_s: a collective that waits longer than this fails instead of hanging.

    Yields:
        This process's device: ``cuda:<LOCAL_RANK>`` where CUDA is, else ``cpu``.

    Raises:
        RuntimeError: the variables are missing (not started by torchrun).
    """
    rank, size, local = (_env_int(name) for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{local}") if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    timeout = datetime.timedelta(seconds=timeout_s)
    dist.init_process_group(
        backend or ("nccl" if cuda else "gloo"),
        init_method=init_method,
        rank=rank,
        world_size=size,
        timeout=timeout,
    )
    try:
        yield device
    finally:
        dist.destroy_process_group()


def _env_int(name: str) -> int:
    value = os.environ.get(name)
    if value is None or not value.isdigit():
        raise RuntimeError(
            f"{name} is {value!r}, not a process index: start each learner process with "
            "`torchrun --nproc-per-node N script.py` (or set RANK, WORLD_SIZE and LOCAL_RANK)"
        )
    return int(value)


class DataParallel:
    """The processes of a ``torch.distributed`` group learning as one (parl's ``replicas``).

    ``DataParallel(alg)`` copies rank 0's weights into every process's models (all the
    algorithm's models, target networks too) and sets ``alg.replicas``. Every process must then
    call the same ``learn`` with the same number of rows (:meth:`shard` cuts a batch), in the
    same order: each gradient step is one all-reduce, which waits for every process.

    Args:
        algorithm: a torch algorithm whose update calls ``ops.step(..., replicas=...)`` (PPO,
            IMPALA); its class's ``batch_reduction`` says whether gradients are averaged
            (``"mean"`` losses) or added (``"sum"`` losses).
        group: the process group; None: the default one.

    Raises:
        RuntimeError: no process group has been joined (see :func:`process_group`).
        ValueError: the algorithm's ``batch_reduction`` is neither ``"mean"`` nor ``"sum"``.

    Examples:
        A script run with ``torchrun --nproc-per-node 2 train.py``::

            with process_group() as device:
                alg = PPO(model, device=device)
                replicas = DataParallel(alg)
                alg.learn(*replicas.shard(batch))  # each process: its half of the rows
    """

    def __init__(self, algorithm: Any, group: dist.ProcessGroup | None = None) -> None:
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError(
                "DataParallel needs a torch.distributed process group: run the script under "
                "torchrun and build it inside `with parl.core.torch.data_parallel."
                "process_group():`"
            )
        reduction = getattr(algorithm, "batch_reduction", "mean")
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"{type(algorithm).__name__}.batch_reduction is {reduction!r}; set it to "
                "'mean' (the loss averages over rows) or 'sum' (it adds them up)"
            )
        self.group = group
        self.size: int = dist.get_world_size(group)
        self.rank: int = dist.get_rank(group)
        self._average = reduction == "mean"
        self._broadcast_weights(algorithm)
        algorithm.replicas = self

    def _broadcast_weights(self, algorithm: Any) -> None:
        """Every model's parameters and buffers from the group's first process."""
        source = dist.get_global_rank(self.group, 0) if self.group is not None else 0
        with torch.no_grad():
            for _, model in algorithm.named_models():
                for tensor in [*model.parameters(), *model.buffers()]:
                    dist.broadcast(tensor.data, source, group=self.group)

    def reduce_gradients(self, optimizer: torch.optim.Optimizer) -> None:
        """Average (or add) the gradients of ``optimizer``'s parameters over the processes.

        One all-reduce per dtype over the gradients laid end to end; a parameter without a
        gradient here counts as zeros, so the processes always reduce the same layout.
        """
        parameters = [p for group in optimizer.param_groups for p in group["params"]]
        by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
        for parameter in parameters:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
            by_dtype.setdefault(parameter.grad.dtype, []).append(parameter.grad)
        for grads in by_dtype.values():
            flat = torch.cat([grad.reshape(-1) for grad in grads])
            dist.all_reduce(flat, group=self.group)
            if self._average:
                flat.div_(self.size)
            for grad, part in zip(grads, flat.split([g.numel() for g in grads]), strict=True):
                grad.copy_(part.view_as(grad))

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` added up over the processes: a new tensor, outside the autograd graph."""
        total = tensor.detach().clone()
        dist.all_reduce(total, group=self.group)
        return total

    def shard(self, *arrays: Rows) -> list[Rows]:
        """This process's rows of each array: the ``rank``-th of ``size`` equal, contiguous parts.

        Contiguous parts keep whole trajectories together when the rows are laid out
        trajectory after trajectory (IMPALA's ``[B*T]``) and B is a multiple of ``size``.

        Raises:
            ValueError: an array's rows do not split into ``size`` equal parts.
        """
        parts = []
        for index, array in enumerate(arrays):
            rows = len(array)  # type: ignore[arg-type]
            if rows % self.size:
                raise ValueError(
                    f"array {index} has {rows} rows, which do not split into {self.size} equal "
                    f"parts, one per process; pass a multiple of {self.size} rows"
                )
            step = rows // self.size
            parts.append(array[self.rank * step : (self.rank + 1) * step])  # type: ignore[index]
        return parts
