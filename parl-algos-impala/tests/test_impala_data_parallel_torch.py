"""IMPALA on a data-parallel learner: two processes on gloo, each with half of the trajectories
of every batch, end with the weights of one process that learned on all of them. IMPALA's loss
adds up over steps, so the processes' gradients are added, not averaged.

Run as a script, this file is one of the learner's processes (:func:`parl.testing.data_parallel.
run_replicas` starts them).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import parl
from parl.testing.data_parallel import run_replicas

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parl.core.torch.data_parallel import DataParallel, process_group  # noqa: E402

from parl_algos_impala import IMPALA, MLPModel  # noqa: E402

STEPS, TRAJECTORIES, UPDATES = 5, 4, 3


def _impala() -> IMPALA:
    # The batch's gradient norms are 80 to 100: clipped to 60 when the processes' gradients
    # are added (as they must be: the loss is a sum), not when they were averaged. Adam does
    # not see a constant scale, so without clipping the test could not tell sum from mean.
    return IMPALA(MLPModel(4, 3, 16, backend="torch"), STEPS, 0.9, 0.5, max_grad_norm=60.0)


def _batch() -> list[np.ndarray]:
    """``TRAJECTORIES`` trajectories of ``STEPS`` steps, trajectory after trajectory."""
    rng = np.random.default_rng(1)
    rows = STEPS * TRAJECTORIES
    obs = rng.normal(size=(rows, 4)).astype(np.float32)
    actions = rng.integers(0, 3, size=rows)
    logits = rng.normal(size=(rows, 3)).astype(np.float32)
    rewards = rng.normal(size=rows).astype(np.float32)
    dones = (rng.uniform(size=rows) < 0.2).astype(np.float32)
    return [obs, actions, logits, rewards, dones]


def _learn(algorithm: IMPALA, batch: list[np.ndarray]) -> dict[str, np.ndarray]:
    for _ in range(UPDATES):
        algorithm.learn(*batch)
    return {name: p.detach().numpy().copy() for name, p in algorithm.model.named_parameters()}


def _one_process(batch: list[np.ndarray]) -> dict[str, np.ndarray]:
    parl.set_seed(0)
    return _learn(_impala(), batch)


def test_two_processes_take_the_steps_of_one_on_all_trajectories(tmp_path: Path) -> None:
    run_replicas(__file__, [str(tmp_path)], 2, tmp_path)
    expected = _one_process(_batch())
    for rank in range(2):
        got = np.load(tmp_path / f"weights{rank}.npz")
        for name, weight in expected.items():
            np.testing.assert_allclose(got[name], weight, rtol=1e-5, atol=1e-6, err_msg=name)
    half = _one_process([array[: len(array) // 2] for array in _batch()])
    assert max(np.abs(half[n] - expected[n]).max() for n in expected) > 1e-3


def _replica(folder: Path) -> None:
    """One learner process: rank 1 starts from other weights, which rank 0's replace."""
    rank = int(os.environ["RANK"])
    torch.set_num_threads(1)
    with process_group(init_method=f"file://{os.environ['PARL_STORE']}") as device:
        parl.set_seed(rank)
        algorithm = _impala().to(device)
        replicas = DataParallel(algorithm)
        weights = _learn(algorithm, replicas.shard(*_batch()))
    np.savez(folder / f"weights{rank}.npz", **weights)


if __name__ == "__main__":
    _replica(Path(sys.argv[1]))
