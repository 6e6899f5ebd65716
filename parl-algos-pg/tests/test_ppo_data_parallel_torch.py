"""PPO on a data-parallel learner: two processes on gloo, each with half of every batch, end with
the weights of one process that learned on the whole batches.

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

from parl_algos_pg import PPO, DiscretePPOModel  # noqa: E402

BATCH = 32
UPDATES = 3


def _ppo() -> PPO:
    # Clipping bounds the global norm of the averaged gradient: it must act after the reduce.
    return PPO(DiscretePPOModel(4, 3, 16, backend="torch"), max_grad_norm=0.05, target_kl=10.0)


def _batch() -> list[np.ndarray]:
    """A rollout whose advantages have a mean far from 0: normalising them matters."""
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(BATCH, 4)).astype(np.float32)
    action = rng.integers(0, 3, size=BATCH)
    value, returns = (rng.normal(size=BATCH).astype(np.float32) for _ in range(2))
    log_prob = np.log(rng.uniform(0.2, 0.5, size=BATCH)).astype(np.float32)
    adv = (rng.normal(size=BATCH) + 2.0 * np.arange(BATCH) / BATCH).astype(np.float32)
    return [obs, action, value, returns, log_prob, adv]


def _learn(algorithm: PPO, batch: list[np.ndarray]) -> dict[str, np.ndarray]:
    """``UPDATES`` single steps, then two full-batch epochs (the target_kl path); the weights."""
    for _ in range(UPDATES):
        algorithm.learn(*batch)
    algorithm.learn_epochs(*batch, epochs=2, num_minibatches=1)
    return {name: p.detach().numpy().copy() for name, p in algorithm.model.named_parameters()}


def _one_process(batch: list[np.ndarray]) -> dict[str, np.ndarray]:
    parl.set_seed(0)
    return _learn(_ppo(), batch)


def test_two_processes_take_the_steps_of_one_on_the_whole_batch(tmp_path: Path) -> None:
    run_replicas(__file__, [str(tmp_path)], 2, tmp_path)
    expected = _one_process(_batch())
    for rank in range(2):
        got = np.load(tmp_path / f"weights{rank}.npz")
        for name, weight in expected.items():
            np.testing.assert_allclose(got[name], weight, rtol=1e-5, atol=1e-6, err_msg=name)
    # The comparison has teeth: half the batch alone ends elsewhere.
    half = _one_process([array[: BATCH // 2] for array in _batch()])
    assert max(np.abs(half[n] - expected[n]).max() for n in expected) > 1e-3


def test_data_parallel_without_a_process_group_says_how_to_start_one() -> None:
    with pytest.raises(RuntimeError, match="torchrun"):
        DataParallel(_ppo())


def _replica(folder: Path) -> None:
    """One learner process: rank 1 starts from other weights, which rank 0's replace."""
    rank = int(os.environ["RANK"])
    torch.set_num_threads(1)
    with process_group(init_method=f"file://{os.environ['PARL_STORE']}") as device:
        parl.set_seed(rank)
        algorithm = _ppo().to(device)
        replicas = DataParallel(algorithm)
        weights = _learn(algorithm, replicas.shard(*_batch()))
    np.savez(folder / f"weights{rank}.npz", **weights)


if __name__ == "__main__":
    _replica(Path(sys.argv[1]))
