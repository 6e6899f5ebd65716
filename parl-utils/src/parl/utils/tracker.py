"""``EvalTracker``: what every training script does besides learning, written once.

It evaluates the greedy policy every ``eval_every`` env steps with :func:`parl.utils.evaluate`,
keeps the best-evaluated model as ``best_model.ckpt``, notes the first step whose evaluation
reaches a target, logs the fixed metric names (``eval/episodic_return``, ``charts/SPS``, …),
saves the final ``model.ckpt`` and returns the run's figures as a :class:`RunResult`, also
written to ``result.json`` (the role of Stable-Baselines3's ``EvalCallback``). A
:class:`Callback` sees every step, evaluation and checkpoint and can stop training, so a user
extends a script without editing it.

Examples:
    >>> import numpy as np, tempfile
    >>> from parl.utils import make_vector_env
    >>> class Left:  # anything with predict(obs) and save(path)
    ...     def predict(self, obs):
    ...         return np.zeros(len(obs), dtype=np.int64)
    ...     def save(self, path):
    ...         open(path, "wb").close()
    >>> tracker = EvalTracker(
    ...     Left(), make_vector_env("CartPole-v1", 2), eval_every=100, eval_episodes=2,
    ...     seed=0, run_dir=tempfile.mkdtemp(), env_id="CartPole-v1", log_metrics=False)
    >>> tracker.update(100)  # evaluates: the step is due
    False
    >>> result = tracker.finish(100)
    >>> result.evals[0][0], result.best_eval_step
    (100, 100)
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from parl.core.files import atomic_write
from parl.utils import summary
from parl.utils._validation import positive_int
from parl.utils.evaluation import EvalResult, evaluate

import gymnasium as gym
import numpy as np
import pydantic

__all__ = [
    "BEST_MODEL_FILE",
    "CHARTS_SPS",
    "FINAL_MODEL_FILE",
    "RESULT_FILE",
    "Callback",
    "EvalTracker",
    "RunResult",
]

BEST_MODEL_FILE = "best_model.ckpt"
RESULT_FILE = "result.json"
FINAL_MODEL_FILE = "model.ckpt"
CHARTS_SPS = "charts/SPS"
# Evaluations that pick between the final and the best policy play these start states, never
# used by a periodic evaluation, so the kept figure is not the maximum it was chosen by.
_FRESH_SEED_OFFSET = 20_000
_EVAL_SEED_OFFSET = 10_000


class Callback:
    """Hooks into a training loop driven by an :class:`EvalTracker`; override what you need.

    Every method has a do-nothing default, so a subclass implements only its own hooks.
    Callbacks run in the order given, in the thread that trains.
    """

    def on_step(self, step: int, metrics: Mapping[str, float]) -> None:
        """After a training iteration; ``metrics`` is what it logged (may be empty)."""

    def on_eval(self, step: int, result: EvalResult, is_best: bool) -> None:
        """After each greedy evaluation; ``is_best`` when it matched or beat every earlier one."""

    def on_checkpoint(self, step: int, path: Path) -> None:
        """After a checkpoint (``best_model.ckpt`` or the final ``model.ckpt``) was written."""

    def should_stop(self, step: int) -> bool:
        """Return True to end training now (asked after every step)."""
        return False


class _Agent(Protocol):
    def predict(self, obs: np.ndarray) -> Any: ...

    def save(self, path: Path) -> None: ...


class RunResult(pydantic.BaseModel):
    """The figures of one training run; every example returns one, every benchmark stores it."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    env_id: str
    """The gymnasium id trained on."""
    seed: int
    """The run's seed."""
    env_steps: int
    """Environment steps collected."""
    wall_s: float
    """Wall-clock seconds of the run, evaluations included."""
    sps: float
    """Environment steps per wall-clock second (``charts/SPS`` at the end)."""
    final_eval_return: float | None
    """Mean greedy return of the policy the run ends with (None: never evaluated)."""
    best_eval_return: float | None
    """The highest evaluation mean (None: never evaluated)."""
    best_eval_step: int | None
    """Env steps at the first evaluation scoring ``best_eval_return``."""
    target: float | None
    """The evaluation return the run aims for."""
    first_target_step: int | None
    """Env steps at the first evaluation reaching ``target`` (None: not reached)."""
    evals: list[tuple[int, float]]
    """``(env_steps, mean greedy return)`` of every evaluation, in order."""
    stopped_early: bool = False
    """Whether a callback or the target ended training before its budget."""
    extra: dict[str, Any] = {}
    """Figures particular to one algorithm (e.g. IMPALA's learner utilisation)."""

    @property
    def reached_target(self) -> bool:
        """Whether an evaluation reached the target."""
        return self.first_target_step is not None

    def summary(self) -> str:
        """One line for the end of a run, in the run's steps (``extra["steps_are"]``, e.g.
        ``"gradient steps"`` for offline training; env steps by default)."""
        final = "n/a" if self.final_eval_return is None else f"{self.final_eval_return:.1f}"
        steps = self.extra.get("steps_are", "env steps")
        line = (
            f"final evaluation: mean greedy return {final} after {self.env_steps} {steps} "
            f"({self.wall_s:.1f} s, {self.sps:.0f} {steps}/s)"
        )
        if self.best_eval_return is not None:
            line += f"; best {self.best_eval_return:.1f} at {self.best_eval_step}"
        if self.target is not None:
            reached = self.first_target_step
            line += f"; target {self.target:g} " + (
                "not reached" if reached is None else f"first reached at {reached}"
            )
        return line


class EvalTracker:
    """Periodic greedy evaluation, the best and final checkpoints, and a run's figures.

    Call :meth:`update` after every training iteration with the env steps so far (and the
    metrics to log); it evaluates when due and says whether to stop. Call :meth:`finish` once
    at the end for the :class:`RunResult`. Evaluations play the same start states every time
    (``seed + 10000``), so they compare policies, not luck.

    Args:
        agent: has ``predict(obs)`` (the greedy policy over a batch) and ``save(path)``, as a
            ``parl.Agent`` has.
        eval_envs: a vector env of the task (``parl.utils.make_vector_env``); closed by
            :meth:`finish`.
        eval_every: env steps between evaluations; 0 never evaluates (e.g. Atari, where one
            episode is a whole game).
        eval_episodes: episodes per evaluation.
        seed: the run's seed.
        run_dir: where ``best_model.ckpt`` and ``model.ckpt`` go.
        env_id: the task's name, for the result.
        target: the evaluation return whose first reach is recorded.
        stop_at_target: end training at the first evaluation reaching ``target``.
        callbacks: user hooks, run in order.
        policy: the greedy policy; ``agent.predict`` when None.
        log_metrics: send metrics to :mod:`parl.utils.summary` (its sinks: TensorBoard, CSV…).
    """

    def __init__(
        self,
        agent: _Agent,
        eval_envs: gym.vector.VectorEnv,
        *,
        eval_every: int,
        eval_episodes: int,
        seed: int,
        run_dir: str | os.PathLike[str],
        env_id: str,
        target: float | None = None,
        stop_at_target: bool = False,
        callbacks: Sequence[Callback] = (),
        policy: Callable[[np.ndarray], Any] | None = None,
        log_metrics: bool = True,
    ) -> None:
        if eval_every < 0:
            raise ValueError(f"eval_every must be >= 0 env steps (0: never), got {eval_every}")
        if stop_at_target and target is None:
            raise ValueError("stop_at_target=True needs a target return; pass target=...")
        self.agent, self.eval_envs = agent, eval_envs
        self.eval_every = eval_every
        self.eval_episodes = positive_int("eval_episodes", eval_episodes)
        self.seed, self.env_id, self.target = seed, env_id, target
        self.stop_at_target = stop_at_target
        self.run_dir = Path(run_dir)
        self.callbacks = list(callbacks)
        self.policy = policy if policy is not None else agent.predict
        self.log_metrics = log_metrics
        self.evals: list[tuple[int, float]] = []
        self.best_return = -math.inf
        self.first_target_step: int | None = None
        self.stopped_early = False
        self._next_eval = eval_every
        self._start = time.perf_counter()

    @property
    def best_path(self) -> Path:
        """The best-evaluated model's checkpoint."""
        return self.run_dir / BEST_MODEL_FILE

    def sps(self, env_steps: int) -> float:
        """Env steps per wall-clock second since the tracker was made."""
        return env_steps / max(time.perf_counter() - self._start, 1e-9)

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        """Log ``metrics`` at ``step`` (no callbacks; :meth:`update` calls this)."""
        if self.log_metrics and metrics:
            summary.add_scalars(dict(metrics), step)

    def update(self, step: int, metrics: Mapping[str, float] | None = None) -> bool:
        """Log a training iteration, evaluate if due, and return whether to stop.

        Args:
            step: env steps collected so far.
            metrics: scalars to log at ``step`` (``losses/…``, ``charts/…``); ``charts/SPS`` is
                added to them when there are any.
        """
        # Only iterations that log something get charts/SPS: a per-env-step loop stays cheap.
        metrics = {**metrics, CHARTS_SPS: self.sps(step)} if metrics else {}
        self.log(step, metrics)
        for callback in self.callbacks:
            callback.on_step(step, metrics)
        if self.eval_every and step >= self._next_eval:
            while self._next_eval <= step:
                self._next_eval += self.eval_every
            self.evaluate(step)
        stop = any(callback.should_stop(step) for callback in self.callbacks)
        stop = stop or (self.stop_at_target and self.first_target_step is not None)
        self.stopped_early = self.stopped_early or stop
        return stop

    def evaluate(self, step: int) -> EvalResult:
        """Evaluate now: log it, keep the model if best, note the target, tell the callbacks."""
        result = evaluate(
            self.eval_envs, self.policy, self.eval_episodes, seed=self.seed + _EVAL_SEED_OFFSET
        )
        mean = result.mean_return
        self.evals.append((step, mean))
        if self.log_metrics:
            summary.add_scalars(result.metrics(), step)
        is_best = mean >= self.best_return  # ties keep the later, longer-trained policy
        if is_best:
            self.best_return = mean
            self._checkpoint(step, self.best_path)
        if self.first_target_step is None and self.target is not None and mean >= self.target:
            self.first_target_step = step
        for callback in self.callbacks:
            callback.on_eval(step, result, is_best)
        return result

    def _checkpoint(self, step: int, path: Path) -> None:
        self.agent.save(path)
        for callback in self.callbacks:
            callback.on_checkpoint(step, path)

    def _keep_better(self) -> tuple[float, bool]:
        """Keep the final or the best-evaluated model, whichever plays fresh episodes better.

        Both play the same ``eval_episodes`` start states that no evaluation used, so the
        returned figure is not the maximum of noisy evaluations it was chosen by.

        Returns:
            The kept policy's mean return on those episodes and whether it is the best one.
        """
        agent: Any = self.agent
        fresh = self.seed + _FRESH_SEED_OFFSET
        final_weights = agent.get_weights()
        final = evaluate(self.eval_envs, self.policy, self.eval_episodes, seed=fresh).mean_return
        agent.restore(self.best_path)
        best = evaluate(self.eval_envs, self.policy, self.eval_episodes, seed=fresh).mean_return
        if best > final:
            return best, True
        agent.set_weights(final_weights)
        return final, False

    def finish(self, step: int, *, keep_better: bool = False, **extra: Any) -> RunResult:
        """Evaluate the final policy (unless the last evaluation was at ``step``), save it as
        ``model.ckpt``, close the eval envs, and return the run's figures, also written to
        ``result.json`` (what a benchmark that runs the script reads).

        Args:
            step: env steps at the end.
            keep_better: end with the final or the best-evaluated model, whichever plays
                fresh episodes (start states no evaluation used) better; a greedy DQN policy
                can get worse late in training. Needs ``agent.get_weights``, ``set_weights``
                and ``restore``. Adds ``restored_best`` and ``last_eval_return`` to ``extra``;
                ``final_eval_return`` is then the kept policy's return on those episodes.
            **extra: figures particular to the algorithm, stored in ``RunResult.extra``.
        """
        if self.eval_every and (not self.evals or self.evals[-1][0] != step):
            self.evaluate(step)
        final_eval_return = self.evals[-1][1] if self.evals else None
        if keep_better:
            if not self.evals:
                raise ValueError("keep_better needs evaluations; set eval_every > 0")
            extra["last_eval_return"] = final_eval_return
            final_eval_return, extra["restored_best"] = self._keep_better()
        wall_s = time.perf_counter() - self._start
        self._checkpoint(step, self.run_dir / FINAL_MODEL_FILE)
        self.eval_envs.close()
        best_step, best = max(self.evals, key=lambda e: (e[1], -e[0]), default=(None, None))
        result = RunResult(
            env_id=self.env_id,
            seed=self.seed,
            env_steps=step,
            wall_s=wall_s,
            sps=step / max(wall_s, 1e-9),
            final_eval_return=final_eval_return,
            best_eval_return=best,
            best_eval_step=best_step,
            target=self.target,
            first_target_step=self.first_target_step,
            evals=self.evals,
            stopped_early=self.stopped_early,
            extra=extra,
        )
        with atomic_write(self.run_dir / RESULT_FILE) as handle:
            handle.write(result.model_dump_json(indent=1).encode())
        return result
