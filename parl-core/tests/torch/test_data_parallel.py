"""The data-parallel group's checks, in a group of one process (gloo, a file store): what a
caller gets wrong is refused with the fix. Two processes learning as one are tested by the
families (parl-algos-pg's and parl-algos-impala's ``test_*_data_parallel_torch.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from parl.core.neutral import Algorithm, Model

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parl.core.torch.data_parallel import DataParallel, process_group  # noqa: E402


class _Linear(Model):
    def __init__(self, *, backend: str | None = None) -> None:
        super().__init__()
        self.fc = self.nn.Linear(3, 1)


class _Summed(Algorithm):
    batch_reduction = "sum"


@pytest.fixture
def group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    for name in ("RANK", "LOCAL_RANK"):
        monkeypatch.setenv(name, "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    with process_group("gloo", init_method=f"file://{tmp_path / 'store'}", timeout_s=30):
        yield


def test_shard_gives_each_process_equal_rows_and_refuses_a_remainder(group: None) -> None:
    replicas = DataParallel(_Summed(_Linear(backend="torch")))
    rows = np.arange(6)
    (mine,) = replicas.shard(rows)
    np.testing.assert_array_equal(mine, rows)
    replicas.size = 4  # as a rank of four would see it
    with pytest.raises(ValueError, match="array 1 has 6 rows, which do not split into 4"):
        replicas.shard(np.arange(8), rows)


def test_an_unknown_batch_reduction_is_refused(group: None) -> None:
    class Median(Algorithm):
        batch_reduction = "median"

    with pytest.raises(ValueError, match="batch_reduction is 'median'; set it to 'mean'"):
        DataParallel(Median(_Linear(backend="torch")))


def test_the_group_is_the_algorithm_s_replicas_and_reduces_in_place(group: None) -> None:
    algorithm = _Summed(_Linear(backend="torch"))
    replicas = DataParallel(algorithm)
    assert algorithm.replicas is replicas
    weight, bias = algorithm.model.fc.weight, algorithm.model.fc.bias
    weight.grad = torch.ones_like(weight)
    replicas.reduce_gradients(torch.optim.SGD([weight, bias], lr=0.1))
    assert torch.equal(weight.grad, torch.ones_like(weight))  # one process: a sum of one
    assert torch.equal(bias.grad, torch.zeros_like(bias))  # no gradient counts as zeros
    assert replicas.sum(torch.tensor(2.5)).item() == 2.5


def test_outside_torchrun_the_error_says_how_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    joining = process_group()
    with pytest.raises(RuntimeError, match="RANK is None.*torchrun --nproc-per-node N"):
        joining.__enter__()
