"""MAPPO's rollouts: workers that step copies of a team env, in this process or as remote actors.

A :class:`RolloutWorker` holds ``num_envs`` copies of a multi-agent env
(:class:`parl.env.multiagent_env.ParallelEnvAdapter`) and a :class:`~parl_algos_marl.MAPPOAgent`
of its own, built on the learner's framework: :class:`Rollouts` resolves the backend once, in the
learner's process, and hands it to every worker's ``make_agent(backend)``, so a remote job never
picks a framework from its own environment. Each :meth:`RolloutWorker.rollout` loads the
weights it is given and returns ``num_steps`` steps of every env as numpy arrays
(:class:`TeamRollout`). Its random draws come from a generator state of its own (of its agent's
framework's CPU generator), so a worker gives the same rollout in this process as in a remote
job with the same seed.

:class:`Rollouts` splits a team's envs over workers: in this process (``num_workers=0``, one
worker) or as ``num_workers`` actors through ``@parl.remote_class`` on the cluster of
``parl.connect`` (xparl, Ray or a plugin backend). All actors roll out at once, with the weights
sent once per call; a worker whose process died is replaced (a new job, counted in
:attr:`Rollouts.replaced`) and its part is rolled out again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

import parl
from parl.core.ops import ops_for, ops_of_backend
from parl.core.validation import non_negative_int, positive_int
from parl.env.multiagent_env import ParallelEnvAdapter
from parl.utils import logger

import numpy as np

from parl_algos_marl.agent import MAPPOAgent

__all__ = ["RolloutWorker", "Rollouts", "TeamRollout"]

_POLL_S = 0.2


@dataclass
class TeamRollout:
    """``T`` steps of ``E`` team envs with ``n`` agents; per-step arrays are ``[T, E, n]``.

    Concatenating the rollouts of several workers along the env axis (:meth:`concatenate`)
    gives the rollout of all their envs.
    """

    rows: np.ndarray
    """MAPPO's input rows ``[T, E, n, row_dim]`` (:meth:`MAPPOAgent.rows`)."""
    actions: np.ndarray
    values: np.ndarray
    log_probs: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    episode_start: np.ndarray
    """1 where the step is the first of an episode (GAE's ``dones``)."""
    final_values: np.ndarray
    """Values of the final observation where an episode ended (for time-limit bootstraps)."""
    next_values: np.ndarray
    """``[E, n]``: values of the observations after the last step."""
    next_episode_start: np.ndarray
    """``[E, n]``: 1 where an episode starts after the last step."""
    episode_returns: list[float]
    """Team returns (sums of all agents' rewards) of the episodes that ended."""

    @staticmethod
    def concatenate(parts: Sequence[TeamRollout]) -> TeamRollout:
        """The rollout of all the parts' envs, in the order of ``parts``."""
        merged: dict[str, Any] = {}
        for field in fields(TeamRollout):
            values = [getattr(part, field.name) for part in parts]
            if field.name == "episode_returns":
                merged[field.name] = [r for returns in values for r in returns]
            else:
                merged[field.name] = np.concatenate(values, axis=0 if "next" in field.name else 1)
        return TeamRollout(**merged)


class RolloutWorker:
    """Steps ``num_envs`` copies of a team env with the weights it is handed.

    Args:
        make_env: returns one multi-agent env (e.g. ``ParticleEnv("simple_spread")``); picklable for
            remote workers (a script's own functions are).
        make_agent: ``make_agent(backend)`` returns a :class:`~parl_algos_marl.MAPPOAgent` of
            the learner's layout on framework ``backend`` (its model built with
            ``backend=backend``).
        num_envs: env copies.
        seed: env ``i`` starts from ``reset(seed=seed + i)``; the worker's generator (of its
            agent's framework) starts from ``seed``.
        backend: ``"paddle"`` or ``"torch"``, the learner's; None: :func:`parl.get_backend`.
    """

    def __init__(
        self,
        make_env: Callable[[], ParallelEnvAdapter],
        make_agent: Callable[[str], MAPPOAgent],
        num_envs: int,
        seed: int,
        backend: str | None = None,
    ) -> None:
        num_envs = positive_int("num_envs", num_envs)
        backend = backend or parl.get_backend()
        self.envs = [make_env() for _ in range(num_envs)]
        # Building the agent draws its (unused) initial weights from its framework's generator.
        with _swapped_rng_state(ops_of_backend(backend), None):
            self.agent = make_agent(backend)
        if not isinstance(self.agent, MAPPOAgent):
            raise TypeError(f"make_agent must return a MAPPOAgent, got {type(self.agent)}")
        built = self.agent.alg.backend.name
        if built != backend:
            raise ValueError(
                f"make_agent({backend!r}) built a {built} agent; build its model with "
                f"backend={backend!r} (the learner's framework)"
            )
        with _swapped_rng_state(self.ops, None):
            self.ops.seed_rng(seed)
            self._rng_state = self.ops.get_rng_state()
        starts = [env.reset(seed=seed + i) for i, env in enumerate(self.envs)]
        self.obs = np.stack([np.stack(obs_n) for obs_n, _ in starts]).astype(np.float32)
        self.state = np.stack([env.state() for env in self.envs]).astype(np.float32)
        n = self.envs[0].n
        self.episode_start = np.ones((num_envs, n), np.float32)
        self.episode_return = np.zeros(num_envs)

    @property
    def ops(self) -> Any:
        """The ops of the agent's framework (:mod:`parl.core.ops`)."""
        return ops_for(self.agent)

    def pid(self) -> int:
        """The process this worker runs in (to watch or kill it)."""
        return os.getpid()

    def rollout(self, weights: dict[str, np.ndarray] | None, num_steps: int) -> TeamRollout:
        """Load ``weights`` (None: keep the current ones), then step every env ``num_steps``
        times, sampling every agent's action."""
        steps = positive_int("num_steps", num_steps)
        if weights is not None:
            self.agent.set_weights(weights)
        with _swapped_rng_state(self.ops, self._rng_state):
            rollout = self._collect(steps)
            self._rng_state = self.ops.get_rng_state()
        return rollout

    def _collect(self, steps: int) -> TeamRollout:
        agent, envs = self.agent, self.envs
        shape = (steps, len(envs), envs[0].n)
        rows = np.zeros((*shape, agent.rows(self.obs, self.state).shape[-1]), np.float32)
        actions = np.zeros(shape, np.int64)
        values, log_probs, rewards, final_values = (np.zeros(shape) for _ in range(4))
        terminated, truncated, episode_start = (np.zeros(shape) for _ in range(3))
        returns: list[float] = []
        for t in range(steps):
            rows[t], episode_start[t] = agent.rows(self.obs, self.state), self.episode_start
            values[t], actions[t], log_probs[t] = agent.sample(self.obs, self.state)
            for e, env in enumerate(envs):
                obs_n, reward_n, terminated_n, truncated_n, _ = env.step(list(actions[t, e]))
                rewards[t, e], terminated[t, e] = reward_n, terminated_n
                truncated[t, e] = truncated_n
                self.episode_return[e] += sum(reward_n)
                self.obs[e], self.state[e] = np.stack(obs_n), env.state()
                ended = all(a or b for a, b in zip(terminated_n, truncated_n, strict=True))
                self.episode_start[e] = float(ended)
                if ended:
                    final_values[t, e] = agent.value(self.obs[e], self.state[e])
                    obs_n, _ = env.reset()
                    self.obs[e], self.state[e] = np.stack(obs_n), env.state()
                    returns.append(float(self.episode_return[e]))
                    self.episode_return[e] = 0.0
        return TeamRollout(
            rows=rows,
            actions=actions,
            values=values,
            log_probs=log_probs,
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            episode_start=episode_start,
            final_values=final_values,
            next_values=agent.value(self.obs, self.state),
            next_episode_start=self.episode_start.copy(),
            episode_returns=returns,
        )

    def close(self) -> None:
        """Close the envs."""
        for env in self.envs:
            env.close()


@contextmanager
def _swapped_rng_state(ops: Any, state: Any) -> Iterator[None]:
    """Run with the generator of ``ops``' framework at ``state`` (None: as it is), then restore
    the caller's: a worker's draws never move the random stream of the process it runs in."""
    saved = ops.get_rng_state()
    try:
        if state is not None:
            ops.set_rng_state(state)
        yield
    finally:
        ops.set_rng_state(saved)


class Rollouts:
    """A team's envs split over rollout workers, in this process or as remote actors.

    Args:
        make_env: returns one multi-agent env; picklable for remote workers.
        make_agent: ``make_agent(backend)`` returns a :class:`~parl_algos_marl.MAPPOAgent` of
            the learner's layout on framework ``backend``; picklable for remote workers.
        num_envs: env copies over all workers (env ``i`` starts from ``seed + i``).
        num_workers: remote actors, each with ``num_envs // num_workers`` envs, on the cluster
            of ``parl.connect`` (call it first); 0 steps all envs in this process.
        seed: worker ``w`` is ``RolloutWorker(..., seed=seed + w * num_envs // num_workers)``;
            its replacements add ``1_000_003`` per replacement.
        max_replacements: workers replaced after their process died before the next death is
            an error.
        timeout_s: seconds one :meth:`collect` may wait for the workers.
        backend: the learner's framework, ``"paddle"`` or ``"torch"``; None:
            :func:`parl.get_backend` here, in the learner's process. Every worker builds its
            agent on it, whatever its own process would select.

    Examples:
        >>> parl.connect()  # an embedded xparl cluster  # doctest: +SKIP
        >>> rollouts = Rollouts(make_env, make_agent, 8, num_workers=2)  # doctest: +SKIP
        >>> batch = rollouts.collect(agent.get_weights(), num_steps=100)  # doctest: +SKIP
    """

    def __init__(
        self,
        make_env: Callable[[], ParallelEnvAdapter],
        make_agent: Callable[[str], MAPPOAgent],
        num_envs: int,
        num_workers: int = 0,
        seed: int = 0,
        max_replacements: int = 10,
        timeout_s: float = 600.0,
        backend: str | None = None,
    ) -> None:
        num_envs = positive_int("num_envs", num_envs)
        self.num_workers = non_negative_int("num_workers", num_workers)
        if self.num_workers and num_envs % self.num_workers:
            raise ValueError(
                f"num_envs={num_envs} does not split evenly over num_workers={self.num_workers}; "
                "make num_envs a multiple of num_workers"
            )
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.make_env, self.make_agent = make_env, make_agent
        self.backend = backend or parl.get_backend()
        """The framework every worker's agent is built on, resolved once here."""
        ops_of_backend(self.backend)  # an unknown or missing framework fails here, not in a job
        self.envs_per_worker = num_envs // max(self.num_workers, 1)
        self.seed = seed
        self.max_replacements = non_negative_int("max_replacements", max_replacements)
        self.timeout_s = timeout_s
        self.replaced = 0
        """Workers replaced after their process died."""
        self._generations = [0] * max(self.num_workers, 1)
        self.workers: list[Any] = []
        if not self.num_workers:
            self.workers.append(RolloutWorker(make_env, make_agent, num_envs, seed, self.backend))
        else:
            self._remote_class = parl.remote_class(wait=False)(RolloutWorker)
            self.workers = [self._spawn(w) for w in range(self.num_workers)]
            self._await([worker.pid() for worker in self.workers], "start")

    def _spawn(self, slot: int) -> Any:
        seed = self.seed + slot * self.envs_per_worker + 1_000_003 * self._generations[slot]
        return self._remote_class(
            self.make_env, self.make_agent, self.envs_per_worker, seed, self.backend
        )

    def pids(self) -> list[int]:
        """The process id of every worker (this process's own when they run here)."""
        if not self.num_workers:
            return [os.getpid()]
        return list(self._await([worker.pid() for worker in self.workers], "report its pid"))

    def collect(self, weights: dict[str, np.ndarray], num_steps: int) -> TeamRollout:
        """Every worker rolls out ``num_steps`` steps with ``weights``; their rollouts joined
        along the env axis in worker order."""
        if not self.num_workers:
            return self.workers[0].rollout(weights, num_steps)
        futures = [worker.rollout(weights, num_steps) for worker in self.workers]
        parts = self._await(futures, "roll out", weights, num_steps)
        return TeamRollout.concatenate(parts)

    def _await(
        self,
        futures: list[Any],
        what: str,
        weights: dict[str, np.ndarray] | None = None,
        num_steps: int = 0,
    ) -> list[Any]:
        """The futures' results within ``timeout_s``; a dead worker is replaced and, when
        ``weights`` are given, asked again for its rollout."""
        from parl.remote import ActorDiedError, FutureObjectEmpty

        results: list[Any] = [None] * len(futures)
        pending = dict(enumerate(futures))
        deadline = time.monotonic() + self.timeout_s
        while pending:
            for slot, future in list(pending.items()):
                try:
                    results[slot] = future.get(timeout=_POLL_S)
                    del pending[slot]
                except FutureObjectEmpty:
                    pass
                except ActorDiedError as exc:
                    exc.__traceback__ = None  # its frames would keep the dead actor referenced
                    pending[slot] = self._replace(slot, exc, what, weights, num_steps)
            if pending and time.monotonic() > deadline:
                raise TimeoutError(
                    f"rollout workers {sorted(pending)} did not {what} within {self.timeout_s} s; "
                    "raise timeout_s for slow envs or check the cluster (xparl status)"
                )
        return results

    def _replace(
        self,
        slot: int,
        exc: BaseException,
        what: str,
        weights: dict[str, np.ndarray] | None,
        num_steps: int,
    ) -> Any:
        if self.replaced >= self.max_replacements:
            raise RuntimeError(
                f"rollout worker {slot} died ({exc}) after {self.replaced} workers were already "
                f"replaced (max_replacements={self.max_replacements}); see the worker's log on "
                "the cluster (xparl status), or raise max_replacements"
            ) from None
        self.replaced += 1
        self._generations[slot] += 1
        logger.warning("rollout worker %d died (%s); starting a new one to %s", slot, exc, what)
        self.workers[slot] = self._spawn(slot)
        if weights is not None:
            return self.workers[slot].rollout(weights, num_steps)
        return self.workers[slot].pid()

    def close(self) -> None:
        """Close the envs here, or release the remote workers (their jobs exit)."""
        if not self.num_workers:
            self.workers[0].close()
        self.workers = []
