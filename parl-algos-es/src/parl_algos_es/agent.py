"""``ESAgent``: EvoKit's sampling/update workflow for ES, CMA-ES and GA on a ``parl.Model``."""

from __future__ import annotations

import copy
import os
from collections import deque
from collections.abc import Sequence
from typing import Any

from parl.core.errors import CheckpointError
from parl.core.neutral import Agent
from parl.core.random_states import capture_bit_generator_state, check_bit_generator_state
from parl.core.tensor_files import read_tensor_file, write_tensor_file

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike

from parl_algos_es.base import EvolutionAlgorithm
from parl_algos_es.flat import FlatParameters
from parl_algos_es.obs_stats import ObservationMoments, ObservationStats, check_moments
from parl_algos_es.records import SamplingRecord

__all__ = ["SOLVER_FORMAT", "ESAgent"]

SOLVER_FORMAT = "parl_algos_es.solver"
_SOLVER_VERSION = 2
"""1: the search state; 2: and the observation statistics of a normalising agent."""
_ARRAY_PREFIX = "solver/"
_OBS_PREFIX = "observations/"


class ESAgent(Agent):
    """Acts with the current solution or a sampled candidate, and updates from their returns.

    EvoKit's workflow: :meth:`add_noise` draws the next candidate and makes the agent act
    with it (it returns the candidate's :class:`~parl_algos_es.records.SamplingRecord`), the
    caller runs episodes with :meth:`predict` and notes the return, and
    :meth:`update` hands the records and returns to the algorithm. A remote actor that received
    records evaluates each after :meth:`perturb`. :meth:`remove_noise` goes back to the current
    solution, which ``alg.model`` always holds (the candidate lives in a copy of the model).

    With ``normalize_observations``, :meth:`predict` normalises observations with running
    statistics (:class:`~parl_algos_es.obs_stats.ObservationStats`); observations seen while a
    candidate is active are counted apart and merged at the next :meth:`update` (or sent to a
    learner: :meth:`take_observation_moments`, :meth:`merge_observation_moments`), so that the
    statistics stay fixed within a generation.

    Args:
        algorithm: an :class:`~parl_algos_es.es.ES`, ``CMAES`` or ``GA``.
        action_space: maps the model's output to actions: ``Discrete`` → argmax, ``Box`` →
            clipped to its bounds; ``None`` returns the output as it is.
        observation_shape: shape of one observation; without it observations are vectors.
        normalize_observations: keep running statistics and normalise with them.

    Examples:
        >>> from parl.testing import LinearModel
        >>> from parl_algos_es import ES
        >>> agent = ESAgent(ES(LinearModel(4, 2), seed=0, noise_table_size=10_000,
        ...                    population_size=2), gym.spaces.Discrete(2))
        >>> obs = np.ones(4, np.float32)
        >>> records = [agent.add_noise(), agent.add_noise()]
        >>> returns = [float(agent.predict(obs) == 1) for _ in records]
        >>> stats = agent.update(records, returns)
    """

    alg: EvolutionAlgorithm
    checkpoint_state = ("obs_mean", "obs_var", "obs_count")

    def __init__(
        self,
        algorithm: EvolutionAlgorithm,
        action_space: gym.Space | None = None,
        *,
        observation_shape: Sequence[int] | None = None,
        normalize_observations: bool = False,
    ) -> None:
        if not isinstance(algorithm, EvolutionAlgorithm):
            raise TypeError(
                f"ESAgent needs an ES, CMAES or GA algorithm, got {type(algorithm).__name__}"
            )
        if action_space is not None and not isinstance(
            action_space, (gym.spaces.Discrete, gym.spaces.Box)
        ):
            raise TypeError(
                f"action_space must be a gymnasium Discrete or Box space or None, got "
                f"{action_space!r}"
            )
        if normalize_observations and observation_shape is None:
            raise ValueError(
                "normalize_observations needs observation_shape, e.g. env.observation_space.shape"
            )
        super().__init__(algorithm)
        self.action_space = action_space
        self.observation_shape = None if observation_shape is None else tuple(observation_shape)
        self.obs_stats: ObservationStats | None = None
        self.new_obs_stats: ObservationStats | None = None
        if self.observation_shape is not None and normalize_observations:
            self.obs_stats = ObservationStats(self.observation_shape)
            self.new_obs_stats = ObservationStats(self.observation_shape)
        self.record: SamplingRecord | None = None
        self._candidate = FlatParameters(copy.deepcopy(algorithm.flat.model))
        self._queue: deque[SamplingRecord] = deque()

    # -- acting -----------------------------------------------------------------------------------

    def predict(self, obs: ArrayLike) -> Any:
        """The action(s) of the active candidate, or of the current solution when none is.

        Takes one observation or a batch; returns one action or ``[B]``/``[B, act_dim]``.
        """
        array = np.asarray(obs, dtype=np.float32)
        obs_ndim = len(self.observation_shape) if self.observation_shape is not None else 1
        single = array.ndim == obs_ndim
        batch = array[None] if single else array
        if self.obs_stats is not None:
            if self.record is not None:
                self.new_obs_stats.update(batch)  # type: ignore[union-attr]
            batch = self.obs_stats.normalize(batch)
        model = self._candidate.model if self.record is not None else self.alg.model
        with self.ops.no_grad():
            output = self.to_numpy(model(self.to_tensor(batch)))
        actions = self._to_actions(output)
        return actions[0] if single else actions

    def _to_actions(self, output: np.ndarray) -> np.ndarray:
        if isinstance(self.action_space, gym.spaces.Discrete):
            return output.argmax(axis=-1) + self.action_space.start
        if isinstance(self.action_space, gym.spaces.Box):
            return np.clip(output, self.action_space.low, self.action_space.high).astype(np.float32)
        return output

    def sample(self, obs: ArrayLike) -> Any:
        """Same as :meth:`predict`: evolution strategies explore in parameter space."""
        return self.predict(obs)

    # -- EvoKit's sampling and update ----------------------------------------------------------

    def add_noise(self) -> SamplingRecord:
        """Draw the next candidate of this generation, act with it, and return its record.

        ES: consecutive calls give the two sides of an antithetic pair.
        """
        if not self._queue:
            self._queue.extend(self.alg.ask())
        record = self._queue.popleft()
        self.perturb(record)
        return record

    def perturb(self, record: SamplingRecord, parameters: ArrayLike | None = None) -> None:
        """Act with the candidate ``record`` names (e.g. one a learner sent to this actor).

        Args:
            record: the candidate.
            parameters: its flat parameters when this agent's algorithm cannot rebuild them
                (a CMA-ES or GA candidate on an actor); ES rebuilds them from the noise table.
        """
        self._candidate.set(self.alg.candidate(record) if parameters is None else parameters)
        self.record = record

    def remove_noise(self) -> None:
        """Act with the current solution again."""
        self.record = None

    def update(self, records: Sequence[SamplingRecord], rewards: ArrayLike) -> dict[str, float]:
        """Give the candidates' returns to the algorithm; the agent then acts with the new
        solution. Returns the algorithm's statistics (``reward_mean``, …)."""
        self.remove_noise()
        stats = self.alg.tell(list(records), rewards)
        self._queue.clear()
        if self.new_obs_stats is not None:
            self.merge_observation_moments([self.take_observation_moments()])
        return stats

    def learn(self, records: Sequence[SamplingRecord], rewards: ArrayLike) -> dict[str, float]:
        """PARL's name for :meth:`update`."""
        return self.update(records, rewards)

    # -- observation statistics ----------------------------------------------------------------

    def take_observation_moments(self) -> ObservationMoments:
        """The statistics of the observations counted since the last call, then forget them."""
        if self.new_obs_stats is None:
            raise RuntimeError("this agent does not normalise observations")
        moments = self.new_obs_stats.moments()
        self.new_obs_stats = ObservationStats(self.new_obs_stats.shape)
        return moments

    def merge_observation_moments(self, moments: Sequence[ObservationMoments]) -> None:
        """Merge actors' :meth:`take_observation_moments` into the normalising statistics."""
        if self.obs_stats is None:
            raise RuntimeError("this agent does not normalise observations")
        for item in moments:
            self.obs_stats.merge(item)

    @property
    def obs_mean(self) -> np.ndarray:
        """Mean of the normalising statistics (empty without normalisation; for checkpoints)."""
        return self.obs_stats.moments().mean if self.obs_stats is not None else np.zeros(0)

    @obs_mean.setter
    def obs_mean(self, value: ArrayLike) -> None:
        mean = self._checked_moment("obs_mean", value)
        if self.obs_stats is not None:
            self.obs_stats.running.mean = mean

    @property
    def obs_var(self) -> np.ndarray:
        """Variance of the normalising statistics (empty without normalisation)."""
        return self.obs_stats.moments().var if self.obs_stats is not None else np.zeros(0)

    @obs_var.setter
    def obs_var(self, value: ArrayLike) -> None:
        var = self._checked_moment("obs_var", value)
        if (var < 0).any():
            raise ValueError("obs_var must be >= 0")
        if self.obs_stats is not None:
            self.obs_stats.running.var = var

    @property
    def obs_count(self) -> float:
        """Observations counted in the normalising statistics."""
        return self.obs_stats.count if self.obs_stats is not None else 0.0

    @obs_count.setter
    def obs_count(self, value: float) -> None:
        count = float(self._checked_moment("obs_count", value, count=True))
        if self.obs_stats is not None:
            self.obs_stats.running.count = count

    def _checked_moment(self, name: str, value: ArrayLike, count: bool = False) -> np.ndarray:
        """``value`` as a float64 array of the statistics' shape (a scalar for the count, empty
        or zero without normalisation), refused with a clear error unless finite and >= 0 for
        the count; nothing changes on error."""
        array = np.array(value, dtype=np.float64)
        if self.obs_stats is None:
            shape: tuple[int, ...] = () if count else (0,)
            if array.shape != shape or array.any():
                raise ValueError(f"{name}: this agent does not normalise observations")
        elif array.shape != (() if count else self.obs_stats.shape):
            wanted = "a scalar" if count else f"the observations' shape {self.obs_stats.shape}"
            raise ValueError(f"{name} must be {wanted}, got shape {array.shape}")
        if not np.isfinite(array).all() or (count and array < 0):
            raise ValueError(f"{name} must be finite{' and >= 0' if count else ''}, got {value!r}")
        return array

    def check_checkpoint_state(self, values: dict[str, Any]) -> None:
        """Check the saved statistics together before a checkpoint sets any of them.

        Raises:
            ValueError: one does not fit, or they are not statistics of float32 observations.
        """
        mean = self._checked_moment("obs_mean", values["obs_mean"])
        var = self._checked_moment("obs_var", values["obs_var"])
        count = float(self._checked_moment("obs_count", values["obs_count"], count=True))
        if self.obs_stats is not None:
            check_moments(mean, var, count)

    # -- solver files --------------------------------------------------------------------------

    def save_solver(self, path: str | os.PathLike[str]) -> None:
        """Save the search state (optimizer moments, CMA state or GA population, and the
        sampling generator) and, when the agent normalises observations, the normalising
        statistics, atomically to a safetensors file; the model is saved by :meth:`save`.

        Observations counted under noise and not yet merged by :meth:`update` are not saved.
        """
        arrays, scalars = self.alg.solver_state()
        tensors = {_ARRAY_PREFIX + k: v for k, v in arrays.items()}
        observations = None
        if self.obs_stats is not None:
            moments = self.obs_stats.moments()
            tensors |= {_OBS_PREFIX + "mean": moments.mean, _OBS_PREFIX + "var": moments.var}
            observations = {"count": moments.count}
        metadata = {
            "format": SOLVER_FORMAT,
            "version": _SOLVER_VERSION,
            "algorithm": type(self.alg).__qualname__,
            "model": self.alg.model_fingerprint(),
            "config": self.alg.config.model_dump(mode="json"),
            "scalars": scalars,
            "rng": capture_bit_generator_state(self.alg.rng),
            "observations": observations,
        }
        write_tensor_file(path, tensors, metadata)

    def load_solver(self, path: str | os.PathLike[str]) -> None:
        """Load a file written by :meth:`save_solver`, checking all of it before applying it.

        Raises:
            CheckpointError: the file is missing, truncated, not a solver file, of a newer
                version, from another algorithm or another model, has observation statistics
                where this agent keeps none or lacks them where it does, or any entry does not
                fit; nothing is changed then.
        """
        where = repr(str(path))
        loaded = read_tensor_file(path)
        meta = loaded.metadata
        if meta.get("format") != SOLVER_FORMAT:
            raise CheckpointError(
                f"{where} is not a solver file (format {meta.get('format')!r}); write one with "
                "ESAgent.save_solver"
            )
        if not isinstance(meta.get("version"), int) or meta["version"] > _SOLVER_VERSION:
            raise CheckpointError(
                f"{where} has solver format version {meta.get('version')!r}; this parl-algos-es "
                f"reads up to {_SOLVER_VERSION}: upgrade it"
            )
        algorithm = type(self.alg).__qualname__
        if meta.get("algorithm") != algorithm:
            raise CheckpointError(
                f"{where} holds the state of a {meta.get('algorithm')} solver, not of this "
                f"agent's {algorithm}"
            )
        fingerprint = self.alg.model_fingerprint()
        if meta.get("model") != fingerprint:
            raise CheckpointError(
                f"{where} was saved for another model: {meta.get('model')}, but this agent's "
                f"model is {fingerprint}; load it into an agent built on the same model"
            )
        arrays = {
            k.removeprefix(_ARRAY_PREFIX): v
            for k, v in loaded.tensors.items()
            if k.startswith(_ARRAY_PREFIX)
        }
        observations = {
            k.removeprefix(_OBS_PREFIX): v
            for k, v in loaded.tensors.items()
            if k.startswith(_OBS_PREFIX)
        }
        if len(arrays) + len(observations) != len(loaded.tensors):
            raise CheckpointError(f"{where} holds arrays that are not solver state")
        obs_moments = self._check_solver_observations(observations, meta, where)
        scalars = meta.get("scalars")
        if not isinstance(scalars, dict):
            raise CheckpointError(f"{where} has no solver numbers")
        try:
            apply = self.alg.plan_solver_restore(arrays, scalars, where)
        except ValueError as exc:
            raise CheckpointError(str(exc)) from exc
        name = type(self.alg.rng.bit_generator).__name__
        rng_state = check_bit_generator_state(meta.get("rng"), name, f"{where}'s generator state")
        apply()
        self.alg.rng.bit_generator.state = rng_state
        if self.obs_stats is not None and obs_moments is not None:
            self.obs_stats = ObservationStats(
                self.obs_stats.shape, self.obs_stats.min_std, self.obs_stats.clip
            )
            self.merge_observation_moments([obs_moments])
            self.new_obs_stats = ObservationStats(self.obs_stats.shape)
        self.remove_noise()
        self._queue.clear()

    def _check_solver_observations(
        self, arrays: dict[str, np.ndarray], meta: dict[str, Any], where: str
    ) -> ObservationMoments | None:
        """The observation statistics of a solver file, checked against this agent."""
        entry = meta.get("observations")
        if self.obs_stats is None:
            if arrays or entry is not None:
                raise CheckpointError(
                    f"{where} holds observation statistics but this agent does not normalise "
                    "observations; build it with normalize_observations=True and its "
                    "observation_shape"
                )
            return None
        if entry is None and not arrays:
            raise CheckpointError(
                f"{where} holds no observation statistics but this agent normalises "
                "observations; it was saved by an agent without normalize_observations (or by "
                "parl-algos-es before solver format 2): load it into such an agent"
            )
        shape = self.obs_stats.shape
        if (
            not isinstance(entry, dict)
            or sorted(arrays) != ["mean", "var"]
            or any(a.dtype != np.float64 or a.shape != shape for a in arrays.values())
        ):
            found = {k: f"{a.dtype} {a.shape}" for k, a in sorted(arrays.items())}
            raise CheckpointError(
                f"{where}'s observation statistics do not fit this agent: expected float64 "
                f"mean and var of shape {shape} and a count, got {found} and {entry!r}"
            )
        count: Any = entry.get("count")
        try:
            check_moments(arrays["mean"], arrays["var"], count)
            moments = ObservationMoments(arrays["mean"], arrays["var"], float(count))
            ObservationStats(shape).merge(moments)  # the merge must stay finite too
        except ValueError as exc:
            raise CheckpointError(
                f"{where}'s observation statistics are not valid: {exc} (the count must be a "
                "finite number >= 0, mean and var finite, var >= 0)"
            ) from exc
        return moments
