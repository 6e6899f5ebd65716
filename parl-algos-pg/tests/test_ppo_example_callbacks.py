"""The PPO example called as a library user would: ``train(Args(...), callbacks=[...])``.

A user's callback stops training early, and another sees every evaluation and checkpoint,
without editing the example (which is imported from its file, as a script is not a package).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from parl.utils import Callback, ConfigError, load_config, parse_args

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "PPO" / "train.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ppo_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # tyro and dataclasses resolve annotations through it
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


class StopAfter(Callback):
    def __init__(self, steps: int) -> None:
        self.steps, self.seen = steps, []

    def on_step(self, step, metrics):
        self.seen.append(step)

    def should_stop(self, step):
        return step >= self.steps


class Recorder(Callback):
    def __init__(self) -> None:
        self.evals, self.checkpoints = [], []

    def on_eval(self, step, result, is_best):
        self.evals.append((step, result.mean_return, is_best))

    def on_checkpoint(self, step, path):
        self.checkpoints.append((step, path.name, path.is_file()))


def _args(example: ModuleType, tmp_path: Path, **overrides):
    tiny = dict(total_steps=1024, num_envs=2, num_steps=64, update_epochs=2, eval_every=256)
    return example.Args(eval_episodes=2, logdir=str(tmp_path), quiet=True, **tiny | overrides)


def test_a_user_callback_stops_training_early(example, tmp_path):
    stopper = StopAfter(256)
    result = example.train(_args(example, tmp_path), callbacks=[stopper])
    assert stopper.seen == [128, 256]  # 2 envs x 64 steps per update
    assert result.env_steps == 256 and result.stopped_early
    assert (tmp_path / "model.ckpt").is_file()


def test_a_user_callback_sees_every_evaluation_and_checkpoint(example, tmp_path):
    recorder = Recorder()
    result = example.train(_args(example, tmp_path), callbacks=[recorder])
    assert [step for step, _, _ in recorder.evals] == [256, 512, 768, 1024]
    assert [(s, r) for s, r, _ in recorder.evals] == result.evals
    best_steps = [step for step, _, is_best in recorder.evals if is_best]
    saved_best = [
        (step, True) for step, name, ok in recorder.checkpoints if name == "best_model.ckpt"
    ]
    assert saved_best == [(step, True) for step in best_steps] and best_steps[0] == 256
    assert recorder.checkpoints[-1] == (1024, "model.ckpt", True)
    assert not result.stopped_early


def test_a_saved_config_reloads_with_flags_on_top(example, tmp_path):
    example.train(_args(example, tmp_path, total_steps=256, seed=4))
    saved = load_config(example.Args, tmp_path / "config.yaml")
    assert saved == _args(example, tmp_path, total_steps=256, seed=4)
    again = parse_args(example.Args, ["--config", str(tmp_path / "config.yaml"), "--seed", "5"])
    assert again == _args(example, tmp_path, total_steps=256, seed=5)
    (tmp_path / "bad.yaml").write_text("total_step: 10\n")
    with pytest.raises(ConfigError, match="'total_step' \\(did you mean 'total_steps'\\?\\)"):
        parse_args(example.Args, ["--config", str(tmp_path / "bad.yaml")])
