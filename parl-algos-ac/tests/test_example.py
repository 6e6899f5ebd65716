"""The A2C example's own helpers (the example runs end to end in ``nox -s examples``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "A2C" / "train.py"


def _load_example() -> ModuleType:
    sys.path.insert(0, str(EXAMPLE.parent))
    spec = importlib.util.spec_from_file_location("a2c_example_train", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_merge_batches_takes_a_sampler_whose_episodes_all_ran_on() -> None:
    # Once CartPole's episodes grow long, one sampler's rollout can end no episode: its
    # episodes=[] once made the learner's concatenation fail mid-run.
    example = _load_example()
    ended = {"obs": np.zeros((4, 2)), "actions": np.zeros(4), "episodes": [(21.0, 21)]}
    running = {"obs": np.ones((4, 2)), "actions": np.ones(4), "episodes": []}
    batch = example.merge_batches([ended, running])
    assert set(batch) == {"obs", "actions"}
    assert batch["obs"].shape == (8, 2)
    np.testing.assert_array_equal(batch["actions"], [0, 0, 0, 0, 1, 1, 1, 1])
