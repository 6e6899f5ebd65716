"""A torch ``learn()`` never reads a value back to the host: run on a CPU, every operation
that would make the host wait for a GPU is refused while ``learn`` runs.

Refused: a scalar read (``.item()``, ``float``, ``int``, ``bool`` of a tensor: aten's
``_local_scalar_dense``), an op whose output shape depends on values (``nonzero``,
``masked_select``, ``unique``, boolean indexing), host data made into a tensor inside ``learn``
(``lift_fresh``: a host-to-device copy on a GPU), and ``Tensor.numpy``/``tolist``/``cpu``.
Allowed: Adam's step counter, which torch keeps on the host (not on the GPU) unless the
optimizer is capturable or fused. The batch is made of tensors, as a replay memory on the
device hands them; host (numpy) input is checked on the host before its one copy.
``test_device_gpu.py`` runs the same updates on a GPU under ``torch.cuda.set_sync_debug_mode``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import parl

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from .learners import HOST_UPDATES, LEARNERS  # noqa: E402

DYNAMIC_SHAPES = {
    "aten.nonzero.default",
    "aten.masked_select.default",
    "aten._unique2.default",
    "aten.unique_consecutive.default",
    "aten.unique_dim.default",
}
HOST_DATA = {"aten.lift_fresh.default", "aten.lift_fresh_copy.default"}


class HostRead(AssertionError):
    """``learn`` did something that waits for the device on a GPU."""


class RefuseHostReads(TorchDispatchMode):
    """Refuse, during ``learn``, every op that on a GPU would synchronise with the host."""

    def __init__(self, host_scalars: list[Any]) -> None:
        super().__init__()
        self.host_scalars = host_scalars

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = str(func)
        if name == "aten._local_scalar_dense.default":
            if not any(args[0] is scalar for scalar in self.host_scalars):
                raise HostRead(f"a scalar read back ({args[0].dtype} {list(args[0].shape)})")
        elif name in DYNAMIC_SHAPES or name in HOST_DATA:
            raise HostRead(name)
        elif name == "aten.index.Tensor" and any(
            index is not None and index.dtype in (torch.bool, torch.uint8) for index in args[1]
        ):
            raise HostRead("boolean indexing (an output shape that depends on values)")
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def no_host_reads(algorithm: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    steps = [
        slot
        for _, optimizer in algorithm.named_optimizers()
        for state in optimizer.state.values()
        for key, slot in state.items()
        if key == "step"
    ]
    for method in ("numpy", "tolist", "cpu", "__array__"):

        def refuse(*args: Any, _method: str = method, **kwargs: Any) -> Any:
            raise HostRead(f"Tensor.{_method}")

        monkeypatch.setattr(torch.Tensor, method, refuse)
    with RefuseHostReads(steps):
        yield
    monkeypatch.undo()


def test_every_registered_algorithm_is_covered() -> None:
    names = set(parl.algorithms.names(backend="torch"))
    missing = names - set(LEARNERS) - HOST_UPDATES
    assert not missing, (
        f"{sorted(missing)} have no builder in parl-core/tests/torch/learners.py: add one, so "
        "that their learn() is checked for host round trips"
    )


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_learn_reads_nothing_back_from_the_device(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.manual_seed(0)
    algorithm, batch = LEARNERS[name]("cpu")
    for _ in range(2):  # every optimizer (TD3's delayed actor's too) has made its slots
        algorithm.learn(*batch)
    with no_host_reads(algorithm, monkeypatch):
        for _ in range(2):  # TD3: a critic step and a full step
            algorithm.learn(*batch)


def test_the_guard_refuses_a_scalar_read(monkeypatch: pytest.MonkeyPatch) -> None:
    algorithm, batch = LEARNERS["DQN"]("cpu")
    algorithm.learn(*batch)
    with pytest.raises(HostRead, match="scalar read"), no_host_reads(algorithm, monkeypatch):
        float(algorithm.learn(*batch))
    with pytest.raises(HostRead, match="Tensor.numpy"), no_host_reads(algorithm, monkeypatch):
        algorithm.learn(*batch).numpy()
