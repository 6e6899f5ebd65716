"""The IMPALA actor-learner system: remote actors sample, one learner thread learns.

Each of ``num_actors`` :class:`RolloutActor` objects lives in its own xparl job (through the
public ``@parl.remote_class(wait=False)`` and :class:`~parl.remote.Future` API only, so any
remote backend runs it) and steps its own gymnasium vector env. A feeder thread per actor asks
its actor for one trajectory batch at a time, handing it the newest weights when they changed,
and puts what comes back in a bounded queue. The learner thread takes batches from the queue,
learns, and publishes new weights by swapping one reference: actors never wait for the learner
(until the queue is full, which bounds the policy lag) and the learner waits only for data.

An actor whose process dies is replaced (a new job, counted in :attr:`ActorLearner.replaced`)
and training goes on; stopping the learner releases every actor; every wait is bounded, so
nothing hangs. ``num_actors=0`` runs the same actor code in the learner's thread: the
single-process baseline.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import parl
from parl.core.distributions import Categorical
from parl.core.ops import ops_for
from parl.core.validation import non_negative_int, positive_int
from parl.utils import RolloutCollector, logger, make_vector_env, summary
from parl.utils.rollout import EPISODIC_RETURN, SPS

import gymnasium as gym
import numpy as np

from parl_algos_impala.impala import IMPALA

__all__ = ["METRICS", "ActorLearner", "RolloutActor", "TrainResult", "Trajectories"]

METRICS = (
    SPS,
    EPISODIC_RETURN,
    "learner/utilisation",
    "learner/queue_depth",
    "learner/policy_lag",
    "losses/kl",
    "losses/pi",
    "losses/vf",
    "losses/entropy",
)
"""The names the learner logs under (with :mod:`parl.utils.summary`)."""

_POLL_S = 0.2
_DIED = object()
_JOIN_S = 10.0


@dataclass
class Trajectories:
    """``N`` trajectories of ``T`` rows from one actor, flattened as :meth:`IMPALA.learn` wants.

    Row ``n*T + t`` is step ``t`` of sub-env ``n``. The first ``T - 1`` rows of a trajectory are
    real steps; the last holds the observation after them (its value bootstraps the trajectory)
    with a placeholder action, zero reward and no end, which :meth:`IMPALA.learn` never learns
    from. The next batch starts from that observation, so no step is lost.
    """

    obs: np.ndarray
    actions: np.ndarray
    logits: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    """Bool: the episode ended with this step (terminated or truncated)."""
    truncated: np.ndarray
    """Bool: the episode was cut by a time limit here (not terminated)."""
    final_obs: np.ndarray
    """The final observations of the truncated steps, in the order of ``truncated``'s rows."""
    episode_returns: list[float]
    env_steps: int
    """Real environment steps in the batch: ``N * (T - 1)``."""
    version: int
    """The weights' version the actor acted with."""
    pid: int
    """The actor's process id."""


class RolloutActor:
    """Steps ``num_envs`` copies of an env with the latest weights; returns fixed-length batches.

    Args:
        make_env: a gymnasium id or a function returning one env.
        make_model: builds the policy model (the learner's model class and framework, weights
            set later); the actor acts on the CPU.
        num_envs: sub-envs of its gymnasium vector env.
        sample_batch_steps: ``T``, rows per trajectory (``T - 1`` real steps each call).
        seed: seeds the model's framework, numpy and the envs of this actor.
    """

    def __init__(
        self,
        make_env: str | Callable[[], gym.Env],
        make_model: Callable[[], Any],
        num_envs: int,
        sample_batch_steps: int,
        seed: int,
    ) -> None:
        self.model = make_model()
        parl.set_seed(seed, backend=ops_for(self.model).BACKEND.name)
        self.steps = sample_batch_steps
        self.version = -1
        self.collector = RolloutCollector(make_vector_env(make_env, num_envs), seed=seed)

    def pid(self) -> int:
        """The process this actor runs in (to watch or kill it)."""
        return os.getpid()

    def _act(self, obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        ops = ops_for(self.model)
        with ops.no_grad():
            policy = Categorical(self.model.policy(ops.to_tensor(obs, "float32")))
            return ops.to_numpy(policy.sample()), {"logits": ops.to_numpy(policy.logits)}

    def sample(self, weights: dict[str, np.ndarray] | None, version: int) -> Trajectories:
        """Load ``weights`` (None: keep the current ones), then collect one batch."""
        if weights is not None:
            self.model.set_weights(weights)
            self.version = version
        rollout = self.collector.rollout(self._act, self.steps - 1)
        _, last = self._act(rollout.next_obs)
        logits = np.concatenate([rollout.extras["logits"], last["logits"][None]])
        num_envs = rollout.rewards.shape[1]
        pad = np.zeros((1, num_envs))

        def flat(time_major: np.ndarray) -> np.ndarray:  # [T, N, ...] -> [N*T, ...]
            return np.swapaxes(time_major, 0, 1).reshape(-1, *time_major.shape[2:])

        ended = rollout.terminations | rollout.truncations
        return Trajectories(
            obs=flat(np.concatenate([rollout.obs, rollout.next_obs[None]])),
            actions=flat(np.concatenate([rollout.actions, pad.astype(rollout.actions.dtype)])),
            logits=flat(logits),
            rewards=flat(np.concatenate([rollout.rewards, pad.astype(np.float32)])),
            dones=flat(np.concatenate([ended, pad.astype(bool)])),
            truncated=flat(np.concatenate([rollout.bootstrap_mask, pad.astype(bool)])),
            final_obs=self._final_obs_in_row_order(rollout),
            episode_returns=[e.episodic_return for e in self.collector.pop_episodes()],
            env_steps=rollout.rewards.size,
            version=self.version,
            pid=os.getpid(),
        )

    @staticmethod
    def _final_obs_in_row_order(rollout: Any) -> np.ndarray:
        """Reorder ``final_obs`` (time-major) to the env-major row order of the batch."""
        times, envs = np.nonzero(rollout.bootstrap_mask)
        order = np.lexsort((times, envs))
        return rollout.final_obs[order]


_RemoteRolloutActor = parl.remote_class(wait=False)(RolloutActor)


@dataclass
class TrainResult:
    """What a finished :meth:`ActorLearner.train` did."""

    env_steps: int
    learn_steps: int
    wall_s: float
    """From the start of :meth:`ActorLearner.train` to its end (actor start-up included)."""
    sps: float
    """Environment steps learned per second after the first learn step (steady state)."""
    replaced_actors: int
    utilisation: float
    """Fraction of the learner's time spent learning rather than waiting for data."""
    episode_returns: list[float]


class ActorLearner:
    """IMPALA's actors and learner: train an :class:`IMPALA` with actors on an xparl cluster.

    Args:
        algorithm: the learner's IMPALA; its ``sample_batch_steps`` is the trajectory length.
        make_env: a gymnasium id or a picklable function returning one env (for the actors).
        make_model: a picklable function building the model (the actors' copy of the policy).
        num_actors: remote actors; 0 runs one actor in the learner's thread (no cluster).
        envs_per_actor: sub-envs of each actor's vector env (trajectories per actor batch).
        batches_per_learn: actor batches concatenated into one ``learn`` call.
        queue_size: the most actor batches waiting for the learner (bounds the policy lag).
        learning_rate: passed to every ``learn``: a number, a function of the env steps
            learned so far (a schedule), or None (keep the optimizer's rate).
        entropy_coeff: passed to every ``learn``: a number, a function of the env steps learned
            so far (a schedule), or None (the algorithm config's).
        address: an xparl master ``host:port``; None starts (or reuses) ``parl.connect()``'s
            embedded cluster with one CPU per actor.
        distributed_files: files every actor's job needs (``parl.connect``'s argument), such
            as the module defining ``make_model`` when it is not installed where actors run.
        seed: actor ``i`` uses ``seed + 1000 * (i + 1)`` (plus the replacement count).
        log_every: log metrics every this many learn steps.

    Examples:
        >>> alg = IMPALA(model, sample_batch_steps=20)  # a model: see IMPALA  # doctest: +SKIP
        >>> system = ActorLearner(alg, "CartPole-v1", Model)  # a cluster  # doctest: +SKIP
        >>> result = system.train(total_env_steps=100_000)  # minutes  # doctest: +SKIP
    """

    def __init__(
        self,
        algorithm: IMPALA,
        make_env: str | Callable[[], gym.Env],
        make_model: Callable[[], Any],
        *,
        num_actors: int = 2,
        envs_per_actor: int = 4,
        batches_per_learn: int = 1,
        queue_size: int = 4,
        learning_rate: float | Callable[[int], float] | None = None,
        entropy_coeff: float | Callable[[int], float] | None = None,
        address: str | None = None,
        distributed_files: Sequence[str] | None = None,
        seed: int = 0,
        log_every: int = 10,
    ) -> None:
        if not isinstance(algorithm, IMPALA):
            raise TypeError(f"ActorLearner trains an IMPALA, got {type(algorithm).__name__}")
        self.algorithm = algorithm
        self.make_env = make_env
        self.make_model = make_model
        self.num_actors = non_negative_int("num_actors", num_actors)
        self.envs_per_actor = positive_int("envs_per_actor", envs_per_actor)
        self.batches_per_learn = positive_int("batches_per_learn", batches_per_learn)
        self.queue: queue.Queue[Trajectories] = queue.Queue(positive_int("queue_size", queue_size))
        self.learning_rate = learning_rate
        self.entropy_coeff = entropy_coeff
        self.address = address
        self.distributed_files = distributed_files
        self.seed = seed
        self.log_every = positive_int("log_every", log_every)
        self.replaced = 0
        """Actors replaced after their process died."""
        self.actor_pids: dict[int, int] = {}
        """Process id of each live remote actor, by slot."""
        self.contributors: set[int] = set()
        """Process ids of the actors whose batches were learned from."""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._weights: tuple[int, dict[str, np.ndarray]] = (0, algorithm.model.get_weights())
        self._errors: list[BaseException] = []
        self._actors: dict[int, Any] = {}

    # -- actors ---------------------------------------------------------------------------

    def _actor_args(self, slot: int, generation: int) -> tuple[Any, ...]:
        seed = self.seed + 1000 * (slot + 1) + generation
        steps = self.algorithm.sample_batch_steps
        return (self.make_env, self.make_model, self.envs_per_actor, steps, seed)

    def _spawn(self, slot: int, generation: int) -> Any:
        actor = _RemoteRolloutActor(*self._actor_args(slot, generation))
        pid = self._wait(actor.pid())
        with self._lock:
            self._actors[slot] = actor
            self.actor_pids[slot] = pid
        return actor

    def _wait(self, future: Any) -> Any:
        """The future's result, polling so that a stop request is seen within ``_POLL_S``."""
        from parl.remote import FutureObjectEmpty

        while not self._stop.is_set():
            try:
                return future.get(timeout=_POLL_S)
            except FutureObjectEmpty:
                continue
        return None

    def _sample(self, actor: Any, slot: int, weights: Any, version: int) -> Any:
        """The actor's next batch; None when stopping; ``_DIED`` when its process died."""
        from parl.remote import ActorDiedError

        try:
            return self._wait(actor.sample(weights, version))
        except ActorDiedError as exc:
            logger.warning("actor %d died (%s); starting a new one", slot, exc)
            # Its traceback's frames would keep this actor alive in a reference cycle.
            exc.__traceback__ = None
            return _DIED

    def _feed(self, slot: int) -> None:
        """One actor's loop: sample with the newest weights, queue the batch; replace it if dead."""
        generation, sent, actor = 0, -1, None
        try:
            actor = self._spawn(slot, generation)
            while not self._stop.is_set():
                version, weights = self._weights
                batch = self._sample(actor, slot, weights if version != sent else None, version)
                if batch is _DIED:
                    generation += 1
                    with self._lock:
                        self.replaced += 1
                    actor, sent = None, -1
                    actor = self._spawn(slot, generation)
                    continue
                sent = version
                while batch is not None and not self._stop.is_set():
                    try:
                        self.queue.put(batch, timeout=_POLL_S)
                        break
                    except queue.Full:
                        continue
        except BaseException as exc:
            self._errors.append(exc)
            self._stop.set()
        finally:
            actor = None  # release it now: a kept traceback still sees this frame
            with self._lock:
                self._actors.pop(slot, None)
                self.actor_pids.pop(slot, None)

    # -- learner --------------------------------------------------------------------------

    def _next_batches(self, local: RolloutActor | None) -> list[Trajectories] | None:
        if local is not None:
            version, weights = self._weights
            return [local.sample(weights, version) for _ in range(self.batches_per_learn)]
        batches: list[Trajectories] = []
        while len(batches) < self.batches_per_learn:
            if self._stop.is_set():
                return None
            try:
                batches.append(self.queue.get(timeout=_POLL_S))
            except queue.Empty:
                continue
        return batches

    def _learn(self, batches: list[Trajectories], env_steps: int) -> tuple[Any, Any]:
        def cat(name: str) -> np.ndarray:
            return np.concatenate([getattr(b, name) for b in batches])

        rewards = cat("rewards")
        truncated = cat("truncated")
        if truncated.any():  # bootstrap time limits from the learner's current values
            final_values = self.algorithm.ops.to_numpy(self.algorithm.value(cat("final_obs")))
            rewards[truncated] += self.algorithm.config.gamma * final_values
        return self.algorithm.learn(
            cat("obs"),
            cat("actions").astype(np.int64),
            cat("logits"),
            rewards,
            cat("dones"),
            self.learning_rate(env_steps) if callable(self.learning_rate) else self.learning_rate,
            self.entropy_coeff(env_steps) if callable(self.entropy_coeff) else self.entropy_coeff,
        )

    def train(
        self,
        total_env_steps: int,
        on_learn: Callable[[int, int], None] | None = None,
    ) -> TrainResult:
        """Train until ``total_env_steps`` environment steps were learned from, then stop.

        Args:
            total_env_steps: the budget in environment steps (all actors together).
            on_learn: called in the learner thread after every learn step with
                ``(learn_steps, env_steps)``, e.g. to evaluate; return value ignored.

        Returns:
            The run's :class:`TrainResult`.

        Raises:
            The first error of the learner or of an actor's feeder (after everything stopped).
        """
        budget = positive_int("total_env_steps", total_env_steps)
        if self.num_actors:
            cpu_num = None if self.address else self.num_actors
            parl.connect(self.address, self.distributed_files, cpu_num=cpu_num)
        feeders = [
            threading.Thread(target=self._feed, args=(slot,), name=f"impala-actor-{slot}")
            for slot in range(self.num_actors)
        ]
        stats: dict[str, Any] = {"env_steps": 0, "learn_steps": 0, "returns": [], "busy": 0.0}
        start = time.perf_counter()
        learner = threading.Thread(
            target=self._learner_loop, args=(budget, on_learn, stats), name="impala-learner"
        )
        for thread in [*feeders, learner]:
            thread.start()
        try:
            while learner.is_alive():
                learner.join(_POLL_S)
        finally:
            self.stop()
            for thread in feeders:
                thread.join(_JOIN_S)
        end = time.perf_counter()
        if self._errors:
            raise self._errors[0]
        steady = end - stats.get("first_at", start)
        return TrainResult(
            env_steps=stats["env_steps"],
            learn_steps=stats["learn_steps"],
            wall_s=end - start,
            sps=(stats["env_steps"] - stats.get("first_steps", 0)) / max(steady, 1e-9),
            replaced_actors=self.replaced,
            utilisation=stats["busy"] / max(steady, 1e-9),
            episode_returns=stats["returns"],
        )

    def _learner_loop(
        self, budget: int, on_learn: Callable[[int, int], None] | None, stats: dict[str, Any]
    ) -> None:
        local = None
        try:
            if not self.num_actors:
                local = RolloutActor(*self._actor_args(0, 0))
            start = time.perf_counter()
            while stats["env_steps"] < budget and not self._stop.is_set():
                batches = self._next_batches(local)
                if batches is None:
                    break
                depth = self.queue.qsize()
                began = time.perf_counter()
                loss, kl = self._learn(batches, stats["env_steps"])
                version = self._weights[0] + 1
                self._weights = (version, self.algorithm.model.get_weights())
                stats["learn_steps"] += 1
                stats["env_steps"] += sum(b.env_steps for b in batches)
                if stats["learn_steps"] == 1:  # the steady state starts now
                    start = stats["first_at"] = time.perf_counter()
                    stats["first_steps"] = stats["env_steps"]
                else:
                    stats["busy"] += time.perf_counter() - began
                returns = [r for b in batches for r in b.episode_returns]
                self.contributors.update(b.pid for b in batches)
                stats["returns"].extend(returns)
                if stats["learn_steps"] % self.log_every == 0:
                    lag = float(np.mean([version - 1 - b.version for b in batches]))
                    wall = time.perf_counter() - start
                    self._log(stats, loss, kl, depth, lag, wall, returns)
                if on_learn is not None:
                    on_learn(stats["learn_steps"], stats["env_steps"])
        except BaseException as exc:
            self._errors.append(exc)
        finally:
            self._stop.set()

    @staticmethod
    def _log(
        stats: dict[str, Any],
        loss: Any,
        kl: Any,
        depth: int,
        lag: float,
        wall: float,
        returns: list[float],
    ) -> None:
        metrics = {
            SPS: stats["env_steps"] / max(wall, 1e-9),
            "learner/utilisation": stats["busy"] / max(wall, 1e-9),
            "learner/queue_depth": float(depth),
            "learner/policy_lag": lag,
            "losses/kl": float(kl),
            "losses/pi": float(loss.pi_loss),
            "losses/vf": float(loss.vf_loss),
            "losses/entropy": float(loss.entropy),
        }
        if returns:
            metrics[EPISODIC_RETURN] = float(np.mean(returns))
        summary.add_scalars(metrics, stats["env_steps"])

    def stop(self) -> None:
        """Stop the learner and the feeders and release every actor (their jobs exit)."""
        self._stop.set()
        with self._lock:
            actors, self._actors = list(self._actors.values()), {}
        del actors
