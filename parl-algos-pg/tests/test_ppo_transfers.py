"""An on-policy update hands the learner its rollout once: PPO.learn_epochs (MAPPO's too)
turns each field of the whole rollout into a tensor once and cuts the minibatches out of those
tensors on the device, so ``epochs × num_minibatches`` gradient steps cost no copy from the host
per minibatch. What crosses from numpy is counted at the framework's own conversion
(``paddle.to_tensor``, ``torch.as_tensor``), through which every host array goes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from parl_algos_pg import PPO, DiscretePPOModel

BACKENDS = [
    pytest.param("paddle", id="paddle"),
    pytest.param("torch", id="torch", marks=pytest.mark.torch),
]
SIZE, EPOCHS = 96, 3


def host_copies(backend: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The shapes of the numpy arrays turned into tensors from now on."""
    framework = pytest.importorskip(backend)
    name = "to_tensor" if backend == "paddle" else "as_tensor"
    convert, shapes = getattr(framework, name), []

    def counted(value: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(value, np.ndarray):
            shapes.append(value.shape)
        return convert(value, *args, **kwargs)

    monkeypatch.setattr(framework, name, counted)
    return shapes


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_minibatches", [1, 4, 12])
def test_learn_epochs_copies_the_rollout_once(
    backend: str, num_minibatches: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(0)
    algorithm = PPO(DiscretePPOModel(4, 2, 16, backend=backend))
    rollout = (
        rng.normal(size=(SIZE, 4)).astype(np.float32),
        rng.integers(0, 2, SIZE),
        *(rng.normal(size=SIZE).astype(np.float32) for _ in range(4)),
    )
    algorithm.learn_epochs(*rollout, 1, num_minibatches, rng=rng)  # the first call reads widths
    shapes = host_copies(backend, monkeypatch)
    stats = algorithm.learn_epochs(*rollout, EPOCHS, num_minibatches, rng=rng)
    assert stats.epochs == EPOCHS
    rows = [shape[0] for shape in shapes if shape]
    # Six fields of SIZE rows once, and one shuffled order of SIZE indices per epoch (none when
    # one minibatch is the whole rollout); no copy of a minibatch's rows.
    shuffles = EPOCHS if num_minibatches > 1 else 0
    assert sorted(rows) == [SIZE] * (6 + shuffles), shapes
