"""EvalTracker and Callback on real CartPole episodes, with an agent that writes real files."""

from __future__ import annotations

from pathlib import Path

from parl.utils import Callback, EvalTracker, RunResult, make_vector_env, summary

import numpy as np
import pytest


class ScriptedAgent:
    """A greedy policy that pushes towards the falling pole (``lean``) or always left."""

    def __init__(self) -> None:
        self.lean = False

    def predict(self, obs: np.ndarray) -> np.ndarray:
        if self.lean:
            return (obs[:, 2] + obs[:, 3] > 0).astype(np.int64)
        return np.zeros(len(obs), dtype=np.int64)

    def save(self, path: Path) -> None:
        np.save(path.with_suffix(".npy"), np.array([self.lean]))
        path.write_bytes(b"lean" if self.lean else b"left")


class Recorder(Callback):
    def __init__(self, stop_at: int | None = None) -> None:
        self.stop_at = stop_at
        self.steps, self.evals, self.checkpoints = [], [], []

    def on_step(self, step, metrics):
        self.steps.append((step, sorted(metrics)))

    def on_eval(self, step, result, is_best):
        self.evals.append((step, result.mean_return, is_best))

    def on_checkpoint(self, step, path):
        self.checkpoints.append((step, path.name, path.read_bytes()))

    def should_stop(self, step):
        return self.stop_at is not None and step >= self.stop_at


def _tracker(agent, tmp_path, **options) -> EvalTracker:
    defaults = dict(eval_every=100, eval_episodes=2, seed=0, run_dir=tmp_path, env_id="CartPole-v1")
    return EvalTracker(agent, make_vector_env("CartPole-v1", 2), **defaults | options)


def test_evaluations_follow_the_schedule_and_keep_the_best_model(tmp_path):
    agent, recorder = ScriptedAgent(), Recorder()
    tracker = _tracker(agent, tmp_path, target=100.0, callbacks=[recorder])
    assert not tracker.update(50, {"losses/x": 1.0})  # not due
    assert not tracker.update(120)  # due: evaluates the always-left policy
    agent.lean = True
    assert not tracker.update(250)  # one evaluation, although 200 was also passed
    agent.lean = False
    result = tracker.finish(260)  # the final policy is evaluated at the final step

    steps = [step for step, _, _ in recorder.evals]
    assert steps == [120, 250, 260]
    left, lean, final = (ret for _, ret, _ in recorder.evals)
    assert left < 20 and lean > 100 and final == left
    assert [is_best for *_, is_best in recorder.evals] == [True, True, False]
    assert (tmp_path / "best_model.ckpt").read_bytes() == b"lean"
    assert (tmp_path / "model.ckpt").read_bytes() == b"left"
    assert [c[:2] for c in recorder.checkpoints] == [
        (120, "best_model.ckpt"),
        (250, "best_model.ckpt"),
        (260, "model.ckpt"),
    ]
    assert recorder.steps[0] == (50, ["charts/SPS", "losses/x"])
    assert recorder.steps[1] == (120, [])  # nothing logged: no SPS either
    assert result.first_target_step == 250 and result.best_eval_step == 250
    assert result.final_eval_return == final and result.evals == [
        (120, left),
        (250, lean),
        (260, final),
    ]
    assert RunResult.model_validate_json((tmp_path / "result.json").read_text()) == result


def test_the_fixed_metric_names_reach_the_sinks(tmp_path):
    summary.set_logdir(tmp_path)
    tracker = _tracker(ScriptedAgent(), tmp_path)
    tracker.update(100, {"losses/td_loss": 0.5})
    tracker.finish(100)
    summary.close()
    tags = {row.split(",")[1] for row in (tmp_path / "metrics.csv").read_text().splitlines()[1:]}
    assert tags == {"losses/td_loss", "charts/SPS", "eval/episodic_return", "eval/episodic_length"}


def test_a_callback_stops_training(tmp_path):
    tracker = _tracker(ScriptedAgent(), tmp_path, callbacks=[Recorder(stop_at=30)])
    assert [tracker.update(step) for step in (10, 20, 30)] == [False, False, True]
    result = tracker.finish(30)
    assert result.stopped_early and result.env_steps == 30


def test_stop_at_target_ends_training_at_the_first_evaluation_reaching_it(tmp_path):
    agent = ScriptedAgent()
    agent.lean = True
    tracker = _tracker(agent, tmp_path, target=100.0, stop_at_target=True)
    assert tracker.update(100)
    result = tracker.finish(100)
    assert result.reached_target and result.stopped_early and len(result.evals) == 1


def test_eval_every_zero_never_evaluates(tmp_path):
    tracker = _tracker(ScriptedAgent(), tmp_path, eval_every=0)
    assert not tracker.update(10_000)
    result = tracker.finish(10_000)
    assert result.evals == [] and result.final_eval_return is None
    assert "n/a" in result.summary()
    assert (tmp_path / "model.ckpt").is_file() and not (tmp_path / "best_model.ckpt").exists()


def test_an_offline_runs_summary_counts_gradient_steps(tmp_path):
    tracker = _tracker(ScriptedAgent(), tmp_path, eval_every=0)
    tracker.update(1000)
    result = tracker.finish(1000, steps_are="gradient steps")
    line = result.summary()
    assert "after 1000 gradient steps (" in line and " gradient steps/s)" in line
    assert "env steps" not in line
    assert "after 1000 env steps (" in result.model_copy(update={"extra": {}}).summary()


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"eval_every": -1}, ValueError, "eval_every must be >= 0"),
        ({"eval_episodes": 0}, ValueError, "eval_episodes"),
        ({"stop_at_target": True}, ValueError, "needs a target"),
    ],
)
def test_bad_settings_are_refused(tmp_path, options, error, match):
    with pytest.raises(error, match=match):
        _tracker(ScriptedAgent(), tmp_path, **options)


def test_keep_better_needs_evaluations(tmp_path):
    tracker = _tracker(ScriptedAgent(), tmp_path, eval_every=0)
    with pytest.raises(ValueError, match="keep_better needs evaluations"):
        tracker.finish(10, keep_better=True)
