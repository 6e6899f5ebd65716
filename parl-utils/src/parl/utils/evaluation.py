"""``evaluate``: the mean return of a policy over whole episodes of a gymnasium vector env."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from parl.utils._validation import positive_int
from parl.utils.rollout import check_same_step_autoreset

import gymnasium as gym
import numpy as np

__all__ = ["EVAL_EPISODIC_RETURN", "EvalResult", "evaluate"]

EVAL_EPISODIC_RETURN = "eval/episodic_return"
EVAL_EPISODIC_LENGTH = "eval/episodic_length"


class EvalResult(NamedTuple):
    """Returns and lengths of the evaluation episodes, in the order they finished."""

    returns: np.ndarray
    lengths: np.ndarray

    @property
    def mean_return(self) -> float:
        """The mean episodic return (``eval/episodic_return``)."""
        return float(np.mean(self.returns))

    def metrics(self) -> dict[str, float]:
        """``{"eval/episodic_return": mean return, "eval/episodic_length": mean length}``."""
        return {
            EVAL_EPISODIC_RETURN: self.mean_return,
            EVAL_EPISODIC_LENGTH: float(np.mean(self.lengths)),
        }


def evaluate(
    envs: gym.vector.VectorEnv,
    policy: Callable[[np.ndarray], Any],
    num_episodes: int,
    *,
    seed: int | None = None,
) -> EvalResult:
    """Play ``num_episodes`` whole episodes with ``policy`` and return their returns.

    The episodes are shared out over the sub-envs in advance (sub-env ``i`` plays
    ``(num_episodes + i) // N``), so short episodes are not over-represented; all sub-envs
    step together with one policy call per step. Returns are raw when the sub-envs record
    them with ``RecordEpisodeStatistics`` below any reward normalisation. The envs are reset
    first (with ``seed``: pass the same seed every time to compare policies on the same start
    states); every episode must end, so the env needs a time limit.

    Args:
        envs: a vector env with ``AutoresetMode.SAME_STEP`` (see
            :func:`parl.utils.make_vector_env`).
        policy: maps observations ``[N, ...]`` to actions ``[N, ...]`` (e.g. ``agent.predict``).
        num_episodes: how many episodes to play.
        seed: passed to ``envs.reset``.

    Examples:
        >>> from parl.utils import make_vector_env
        >>> eval_envs = make_vector_env("CartPole-v1", num_envs=2)
        >>> always_left = lambda obs: np.zeros(len(obs), dtype=np.int64)
        >>> result = evaluate(eval_envs, always_left, 4, seed=10_000)
        >>> len(result.returns)
        4
    """
    check_same_step_autoreset(envs, "evaluate")
    num_episodes = positive_int("num_episodes", num_episodes)
    n = envs.num_envs
    quota = np.array([(num_episodes + i) // n for i in range(n)])
    played = np.zeros(n, dtype=np.int64)
    running_return = np.zeros(n)
    running_length = np.zeros(n, dtype=np.int64)
    returns: list[float] = []
    lengths: list[int] = []
    obs, _ = envs.reset(seed=seed)
    while (played < quota).any():
        obs, reward, terminated, truncated, infos = envs.step(policy(obs))
        running_return += reward
        running_length += 1
        done = terminated | truncated
        if not done.any():
            continue
        episode = infos.get("final_info", {}).get("episode")
        for index in np.flatnonzero(done & (played < quota)):
            recorded = episode is not None and infos["final_info"]["_episode"][index]
            returns.append(float(episode["r"][index] if recorded else running_return[index]))
            lengths.append(int(episode["l"][index] if recorded else running_length[index]))
        played += done
        running_return[done] = 0.0
        running_length[done] = 0
    return EvalResult(np.asarray(returns), np.asarray(lengths))
