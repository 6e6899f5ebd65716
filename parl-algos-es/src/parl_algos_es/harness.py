"""Evolution on a cluster: remote actors evaluate candidates, the learner updates.

Each of ``num_actors`` :class:`EvaluationActor` objects lives in its own job (through the
public ``@parl.remote_class(wait=False)`` API only, so xparl, Ray or a plugin backend runs it)
and plays episodes on its own env copy. Once per generation the learner broadcasts the current
solution (and the observation statistics); then it hands out the generation's sampling records
in small batches, and an actor answers with one return per record and the statistics of the
observations it saw: a few bytes per episode. ES candidates are rebuilt on the actor from its own
noise table; CMA-ES and GA candidates travel with their records, as they cannot be rebuilt.

An actor whose process dies is replaced (a new job, counted in
:attr:`EvolutionHarness.replaced`) and its batch is handed out again. A generation that lacks
results after ``generation_timeout_s`` is a :class:`GenerationTimeoutError`, never a hang.
``num_actors=0`` evaluates in the learner's process: the single-process baseline.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import parl
from parl.core.validation import non_negative_int, positive_int
from parl.utils import evaluate, make_vector_env

import gymnasium as gym
import numpy as np

from parl_algos_es.agent import ESAgent
from parl_algos_es.es import ES
from parl_algos_es.obs_stats import ObservationMoments, ObservationStats
from parl_algos_es.records import SamplingRecord

__all__ = [
    "Evaluation",
    "EvaluationActor",
    "EvolutionHarness",
    "GenerationResult",
    "GenerationTimeoutError",
]

_POLL_S = 0.05


class GenerationTimeoutError(TimeoutError):
    """A generation's results did not all arrive within the harness's bound."""


@dataclass
class Evaluation:
    """An actor's answer for a batch of records: what travels back to the learner."""

    returns: np.ndarray
    """Mean return of each record's episodes, in the order of the records."""
    env_steps: int
    obs_moments: ObservationMoments | None
    """Statistics of the observations seen (agents that normalise observations)."""
    pid: int
    seconds: float = 0.0
    """How long the actor spent on the batch (its own clock, from the call to the answer)."""


def describe(agent: ESAgent) -> dict[str, Any]:
    """What learner and actors must agree on: algorithm class, config, model layout."""
    alg = agent.alg
    return {
        "algorithm": type(alg).__qualname__,
        "config": alg.config.model_dump(mode="json"),
        "model": alg.model_fingerprint(),
    }


def episode_seed(seed: int, generation: int, record: SamplingRecord) -> int:
    """The env seed of a record's episodes: both sides of an ES pair meet the same start."""
    return int(np.random.SeedSequence([seed, generation, record.key]).generate_state(1)[0])


class EvaluationActor:
    """Plays episodes of candidates on its own env copy (runs in a job of the cluster).

    Args:
        make_agent: builds the agent, as the learner's was built (same model, same algorithm
            and config: ES rebuilds candidates from its noise table).
        make_env: a gymnasium id or a function returning one env (with a time limit).
        episodes_per_candidate: episodes averaged into one candidate's return.
        seed: seeds the framework and numpy in this actor.
    """

    def __init__(
        self,
        make_agent: Callable[[], ESAgent],
        make_env: str | Callable[[], gym.Env],
        episodes_per_candidate: int,
        seed: int,
    ) -> None:
        parl.set_seed(seed)
        self.agent = make_agent()
        self.envs = make_vector_env(make_env, 1)
        self.episodes = positive_int("episodes_per_candidate", episodes_per_candidate)

    def pid(self) -> int:
        """The process this actor runs in (to watch or kill it)."""
        return os.getpid()

    def describe(self) -> dict[str, Any]:
        """The agent's algorithm, config and model layout, which must match the learner's."""
        return describe(self.agent)

    def set_solution(self, parameters: np.ndarray, obs_moments: ObservationMoments | None) -> None:
        """Take the learner's current solution and observation statistics (once a generation)."""
        self.agent.alg.flat.set(parameters)
        if obs_moments is not None and self.agent.obs_stats is not None:
            self.agent.obs_stats = ObservationStats(self.agent.obs_stats.shape)
            self.agent.merge_observation_moments([obs_moments])

    def evaluate(
        self,
        records: Sequence[SamplingRecord],
        candidates: np.ndarray | None,
        seeds: Sequence[int],
        solution: tuple[np.ndarray, ObservationMoments | None] | None = None,
    ) -> Evaluation:
        """Play each record's episodes (env seeded with ``seeds[i]``) and return the returns.

        ``solution``: the learner's new solution, sent with the first batch after it changed.
        """
        start = time.perf_counter()
        if solution is not None:
            self.set_solution(*solution)
        returns, steps = np.empty(len(records)), 0
        for i, record in enumerate(records):
            self.agent.perturb(record, None if candidates is None else candidates[i])
            result = evaluate(self.envs, self.agent.predict, self.episodes, seed=seeds[i])
            returns[i], steps = result.mean_return, steps + int(result.lengths.sum())
        self.agent.remove_noise()
        moments = None
        if self.agent.new_obs_stats is not None:
            moments = self.agent.take_observation_moments()
        return Evaluation(returns, steps, moments, os.getpid(), time.perf_counter() - start)


_RemoteEvaluationActor = parl.remote_class(wait=False)(EvaluationActor)


@dataclass
class GenerationResult:
    """What one generation did."""

    generation: int
    stats: dict[str, float]
    """The algorithm's statistics (``reward_mean``, ``reward_max``, …)."""
    env_steps: int
    wall_s: float
    """Seconds from asking to the end of telling (starting the first actors not counted)."""
    learner_s: float
    """Of ``wall_s``, the time the learner spent asking, telling and merging."""
    contributors: set[int]
    """Process ids of the actors whose returns were told."""
    actor_s: float = 0.0
    """The longest time one actor spent on this update's batches (their own clocks); ``wall_s``
    less this is what the harness added beyond the busiest actor's work."""


@dataclass
class _Batch:
    """Records handed to one actor in one call."""

    order: int
    """Batches are told in the order they were made (a deterministic sum, whatever arrived
    first)."""
    records: list[SamplingRecord]
    candidates: np.ndarray | None
    seeds: list[int]


class EvolutionHarness:
    """Trains an :class:`ESAgent` (ES, CMA-ES or GA) with actors on a cluster.

    Synchronous (``mode="sync"``, :meth:`run_generation`): every candidate of a generation is
    evaluated, then the algorithm is told. Asynchronous (``mode="async"``, ES only, EvoKit's
    "async"): actors never wait; the learner updates as soon as ``results_per_update`` returns
    arrived, whatever solution they were evaluated around, and actors get the new solution
    with their next batch.

    Args:
        agent: the learner's agent.
        make_agent: a picklable function building the same agent, for the actors.
        make_env: a gymnasium id or a picklable function returning one env.
        num_actors: remote actors; 0 evaluates in the learner's process (no cluster, sync).
        mode: ``"sync"`` or ``"async"``.
        results_per_update: async: the returns an update waits for (whole ES pairs); None:
            the algorithm's population.
        episodes_per_candidate: episodes averaged into one candidate's return.
        records_per_call: records in one actor call; None shares a generation out in about
            four calls per actor (small enough to re-issue cheaply, large enough to pay the
            call's overhead once per several episodes).
        generation_timeout_s: the longest a generation (or an async update) may take before
            :class:`GenerationTimeoutError`.
        address: a cluster address for ``parl.connect`` (``"host:port"``, ``"ray"``, …); None
            starts (or reuses) an embedded xparl cluster with one CPU per actor.
        distributed_files: files every actor's job needs (``parl.connect``'s argument).
        seed: seeds the actors (actor ``i``: ``seed + 1000·(i + 1)`` plus its replacements) and
            the episodes' envs.

    Examples:
        >>> harness = EvolutionHarness(agent, make_agent, "CartPole-v1")  # doctest: +SKIP
        >>> results = harness.train(generations=50)  # doctest: +SKIP
        >>> harness.close()  # doctest: +SKIP
    """

    def __init__(
        self,
        agent: ESAgent,
        make_agent: Callable[[], ESAgent],
        make_env: str | Callable[[], gym.Env],
        *,
        num_actors: int = 2,
        mode: Literal["sync", "async"] = "sync",
        results_per_update: int | None = None,
        episodes_per_candidate: int = 1,
        records_per_call: int | None = None,
        generation_timeout_s: float = 600.0,
        address: str | None = None,
        distributed_files: Sequence[str] | None = None,
        seed: int = 0,
    ) -> None:
        if not isinstance(agent, ESAgent):
            raise TypeError(f"EvolutionHarness trains an ESAgent, got {type(agent).__name__}")
        if not generation_timeout_s > 0:
            raise ValueError(f"generation_timeout_s must be > 0, got {generation_timeout_s!r}")
        self.agent = agent
        self.make_agent = make_agent
        self.make_env = make_env
        self.num_actors = non_negative_int("num_actors", num_actors)
        self.mode = self._check_mode(mode)
        self.results_per_update = (
            None
            if results_per_update is None
            else positive_int("results_per_update", results_per_update)
        )
        self.episodes = positive_int("episodes_per_candidate", episodes_per_candidate)
        self.records_per_call = (
            None if records_per_call is None else positive_int("records_per_call", records_per_call)
        )
        self.timeout_s = float(generation_timeout_s)
        self.address = address
        self.distributed_files = distributed_files
        self.seed = seed
        self.generation = 0
        """Updates made so far."""
        self.replaced = 0
        """Actors replaced after their process died."""
        self.actor_pids: dict[int, int] = {}
        """Process id of each live remote actor, by slot."""
        self._actors: dict[int, Any] = {}
        self._briefed: dict[int, int] = {}
        """The generation whose solution each actor holds."""
        self._running: dict[int, tuple[_Batch, Any]] = {}
        self._order = itertools.count()
        self._connected = False
        self._local: EvaluationActor | None = None

    def _check_mode(self, mode: str) -> Literal["sync", "async"]:
        if mode not in ("sync", "async"):
            raise ValueError(f"mode must be 'sync' or 'async', got {mode!r}")
        if mode == "async" and (not isinstance(self.agent.alg, ES) or self.num_actors == 0):
            raise ValueError(
                "mode='async' needs ES (CMA-ES and GA tell whole generations) and remote "
                "actors (num_actors >= 1)"
            )
        return mode  # type: ignore[return-value]

    # -- actors -----------------------------------------------------------------------------------

    def _start(self, deadline: float) -> None:
        if self.num_actors == 0:
            if self._local is None:
                local = EvaluationActor(self.make_agent, self.make_env, self.episodes, self.seed)
                self._check_actor_agent(local.describe())
                self._local = local
            return
        if not self._connected:
            cpu_num = None if self.address else self.num_actors
            parl.connect(self.address, self.distributed_files, cpu_num=cpu_num)
            self._connected = True
        # Create every missing actor first, then wait for them: they start side by side.
        created = {}
        for slot in range(self.num_actors):
            if slot not in self._actors:
                seed = self.seed + 1000 * (slot + 1) + self.replaced
                actor = _RemoteEvaluationActor(self.make_agent, self.make_env, self.episodes, seed)
                created[slot] = (actor, actor.pid(), actor.describe())
        for slot, (actor, pid, description) in created.items():
            self.actor_pids[slot] = self._get(pid, deadline, "starting an actor")
            self._check_actor_agent(self._get(description, deadline, "starting an actor"))
            self._actors[slot] = actor
            self._briefed[slot] = -1

    def _check_actor_agent(self, actors: dict[str, Any]) -> None:
        learner = describe(self.agent)
        if actors != learner:
            different = sorted(k for k in learner if learner[k] != actors.get(k))
            raise ValueError(
                f"make_agent builds an agent whose {', '.join(different)} differ from the "
                f"learner's: {actors} vs {learner}; build both with the same function"
            )

    def _get(self, future: Any, deadline: float, what: str) -> Any:
        """The future's result, or :class:`GenerationTimeoutError` once ``deadline`` passed."""
        from parl.remote import FutureObjectEmpty

        while True:
            try:
                return future.get(timeout=max(min(deadline - time.monotonic(), 1.0), 0.001))
            except FutureObjectEmpty:
                if time.monotonic() > deadline:
                    raise GenerationTimeoutError(
                        f"generation {self.generation}: {what} took longer than "
                        f"{self.timeout_s:g} s; raise generation_timeout_s or look at the "
                        "actors' logs"
                    ) from None

    def close(self) -> None:
        """Release every actor (their jobs end); the harness can start new ones later."""
        self._running.clear()
        self._actors.clear()
        self._briefed.clear()
        self.actor_pids.clear()
        self._local = None

    # -- handing out batches ---------------------------------------------------------------------

    def _solution(self) -> tuple[np.ndarray, ObservationMoments | None]:
        stats = self.agent.obs_stats
        return self.agent.alg.flat.get(), stats.moments() if stats is not None else None

    def _batches(self, records: list[SamplingRecord]) -> list[_Batch]:
        alg = self.agent.alg
        candidates = None if isinstance(alg, ES) else np.stack([alg.candidate(r) for r in records])
        size = self.records_per_call or max(1, -(-len(records) // (4 * max(self.num_actors, 1))))
        size += size % 2 if isinstance(alg, ES) else 0  # keep antithetic pairs together
        seeds = [episode_seed(self.seed, self.generation, r) for r in records]
        return [
            _Batch(
                next(self._order),
                records[start : start + size],
                None if candidates is None else candidates[start : start + size],
                seeds[start : start + size],
            )
            for start in range(0, len(records), size)
        ]

    def _issue(self, slot: int, batch: _Batch) -> None:
        """Send ``batch`` to an actor, with the current solution if it does not hold it yet."""
        solution = self._solution() if self._briefed[slot] != self.generation else None
        future = self._actors[slot].evaluate(batch.records, batch.candidates, batch.seeds, solution)
        self._briefed[slot] = self.generation
        self._running[slot] = (batch, future)

    def _collect(
        self,
        waiting: list[_Batch],
        wanted: int,
        deadline: float,
        refill: Callable[[], list[_Batch]] | None = None,
    ) -> list[tuple[_Batch, Evaluation]]:
        """Keep every actor busy with ``waiting`` batches (then ``refill``'s) until results for
        ``wanted`` records came back; a batch of an actor that died is handed out again."""
        from parl.remote import ActorDiedError, FutureObjectEmpty

        done: list[tuple[_Batch, Evaluation]] = []
        while sum(len(b.records) for b, _ in done) < wanted:
            self._start(deadline)
            for slot in self._actors:
                if slot not in self._running:
                    if not waiting and refill is not None:
                        waiting.extend(refill())
                    if waiting:
                        self._issue(slot, waiting.pop(0))
            for slot, (batch, future) in list(self._running.items()):
                try:
                    done.append((batch, future.get(timeout=_POLL_S / len(self._running))))
                except FutureObjectEmpty:
                    continue
                except ActorDiedError:
                    waiting.insert(0, batch)
                    self._actors.pop(slot)
                    self.actor_pids.pop(slot)
                    self.replaced += 1
                del self._running[slot]
            if time.monotonic() > deadline:
                missing = wanted - sum(len(b.records) for b, _ in done)
                busy = sorted(self._running)
                if self.mode == "sync":  # their results belong to this generation only
                    self._running.clear()
                raise GenerationTimeoutError(
                    f"generation {self.generation}: {missing} of {wanted} candidates had no "
                    f"result after {self.timeout_s:g} s (actors busy: {busy}); raise "
                    "generation_timeout_s or look at the actors' logs"
                )
        return done

    # -- updates ---------------------------------------------------------------------------------

    def run_generation(self) -> GenerationResult:
        """One update: sync, ask a generation, evaluate all of it, tell; async, tell whatever
        ``results_per_update`` returns arrived first.

        Raises:
            GenerationTimeoutError: results were missing after ``generation_timeout_s``; the
                algorithm was not updated.
        """
        self._check_mode(self.mode)  # the attribute may have been switched since __init__
        deadline = time.monotonic() + self.timeout_s
        self._start(deadline)
        start = time.perf_counter()  # starting the cluster and the actors is not a generation's
        alg = self.agent.alg
        if self.mode == "async":
            population = alg.config.population_size  # type: ignore[attr-defined]  # ES's
            per_call = self.records_per_call or 2 * max(1, population // 8)
            wanted = self.results_per_update or population
            learner_s = time.perf_counter() - start
            answers = self._collect([], wanted, deadline, lambda: self._batches(alg.ask(per_call)))
        else:
            batches = self._batches(alg.ask())
            wanted = sum(len(b.records) for b in batches)
            learner_s = time.perf_counter() - start
            if self._local is not None:
                self._local.set_solution(*self._solution())
                answers = [
                    (b, self._local.evaluate(b.records, b.candidates, b.seeds)) for b in batches
                ]
            else:
                answers = self._collect(batches, wanted, deadline)
        tell_start = time.perf_counter()
        stats = self._tell(answers)
        end = time.perf_counter()
        busy: dict[int, float] = {}
        for _, evaluation in answers:
            busy[evaluation.pid] = busy.get(evaluation.pid, 0.0) + evaluation.seconds
        return GenerationResult(
            generation=self.generation,
            stats=stats,
            env_steps=sum(e.env_steps for _, e in answers),
            wall_s=end - start,
            learner_s=learner_s + (end - tell_start),
            contributors={e.pid for _, e in answers},
            actor_s=max(busy.values(), default=0.0),
        )

    def _tell(self, answers: list[tuple[_Batch, Evaluation]]) -> dict[str, float]:
        answers = sorted(answers, key=lambda answer: answer[0].order)
        records = [r for batch, _ in answers for r in batch.records]
        returns = np.concatenate([evaluation.returns for _, evaluation in answers])
        stats = self.agent.update(records, returns)
        moments = [e.obs_moments for _, e in answers if e.obs_moments is not None]
        if moments:
            self.agent.merge_observation_moments(moments)
        self.generation += 1
        return stats

    def train(
        self,
        generations: int,
        on_generation: Callable[[GenerationResult], None] | None = None,
    ) -> list[GenerationResult]:
        """Run ``generations`` updates; ``on_generation`` sees each result (e.g. to log)."""
        results = []
        for _ in range(positive_int("generations", generations)):
            results.append(self.run_generation())
            if on_generation is not None:
                on_generation(results[-1])
        return results
