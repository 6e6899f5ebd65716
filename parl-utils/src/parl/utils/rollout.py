"""Collecting experience from gymnasium vector envs: one convention for every algorithm family.

**Autoreset convention.** Vector envs must reset a finished sub-env in the *same* step
(``gymnasium.vector.AutoresetMode.SAME_STEP``; :func:`make_vector_env` builds one). Then
every step of every sub-env is a real transition: the returned observation of a finished
sub-env is the first of its next episode, and the last observation of the finished episode is
in ``info["final_obs"]``. (Gymnasium's default, ``NEXT_STEP``, spends one extra step per episode
on the reset and returns a "transition" that is not one.)

**Terminated vs truncated.** They stay apart: ``terminated`` ends the return (no bootstrap);
``truncated`` (a time limit) does not, so the final observation of a truncated episode is kept
for the value function: :attr:`Transition.next_obs` holds it for off-policy learners and
:attr:`Rollout.final_obs` for on-policy ones.

* Off-policy, step by step (DQN, SAC, TD3): :meth:`RolloutCollector.step`.
* On-policy, fixed-length rollouts (PPO, A2C, IMPALA actors): :meth:`RolloutCollector.rollout`.
* Episode statistics under the fixed metric names: :meth:`RolloutCollector.log_episodes`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from parl.utils import summary
from parl.utils._validation import positive_int

import gymnasium as gym
import numpy as np

__all__ = [
    "EPISODIC_LENGTH",
    "EPISODIC_RETURN",
    "SPS",
    "Episode",
    "Rollout",
    "RolloutCollector",
    "Transition",
    "check_same_step_autoreset",
    "make_vector_env",
]

EPISODIC_RETURN = "charts/episodic_return"
EPISODIC_LENGTH = "charts/episodic_length"
SPS = "charts/SPS"

Policy = Callable[[np.ndarray], Any]
"""Maps observations ``[N, ...]`` to actions ``[N, ...]``, or to ``(actions, extras)`` where
``extras`` is a dict of per-env arrays (e.g. ``{"value": v, "logprob": lp}``) to store."""


def make_vector_env(
    make_env: str | Callable[[], gym.Env],
    num_envs: int,
    *,
    asynchronous: bool = False,
    engine: str = "gymnasium",
    seed: int | None = None,
) -> gym.vector.VectorEnv:
    """A vector env of ``num_envs`` copies with the collector's autoreset convention.

    Args:
        make_env: a gymnasium id, or (gymnasium only) a function returning one (wrapped) env.
        num_envs: the number of sub-envs.
        asynchronous: gymnasium only: step the sub-envs in subprocesses (``AsyncVectorEnv``),
            worth it when one env step costs more than the inter-process round trip (MuJoCo,
            Atari).
        engine: ``"gymnasium"`` (``SyncVectorEnv``/``AsyncVectorEnv``) or ``"envpool"``
            (EnvPool's C++ envs stepped on its own threads, ``pip install
            "parl-utils[envpool]"``; by id, its own implementations of the tasks; see
            :func:`parl.env.vector_engines.make_envpool`).
        seed: seed the sub-envs now (EnvPool can only be seeded when built); None: leave it to
            the first ``reset`` (``RolloutCollector(envs, seed=...)``).

    Raises:
        ValueError: an unknown ``engine``, or an option the engine does not have.
        ImportError: ``engine="envpool"`` without EnvPool installed.

    Examples:
        >>> envs = make_vector_env("CartPole-v1", 8)
        >>> envs = make_vector_env(lambda: gym.wrappers.RecordEpisodeStatistics(
        ...     gym.make("Pendulum-v1")), 4)
    """
    num_envs = positive_int("num_envs", num_envs)
    if engine == "envpool":
        if asynchronous or not isinstance(make_env, str):
            raise ValueError(
                "engine='envpool' builds its envs by id and steps them on its own threads: "
                "pass a task id (e.g. 'HalfCheetah-v5') and no asynchronous=True"
            )
        from parl.env.vector_engines import make_envpool

        return make_envpool(make_env, num_envs, seed)
    if engine != "gymnasium":
        raise ValueError(f"engine must be 'gymnasium' or 'envpool', got {engine!r}")
    factory = (lambda: gym.make(make_env)) if isinstance(make_env, str) else make_env
    if not callable(factory):
        raise TypeError(
            f"make_env must be a gymnasium id or a function returning an env, got {make_env!r}"
        )
    vector_class = gym.vector.AsyncVectorEnv if asynchronous else gym.vector.SyncVectorEnv
    envs = vector_class([factory] * num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    if seed is not None:
        envs.reset(seed=seed)
    return envs


def check_same_step_autoreset(envs: Any, user: str) -> None:
    """Raise a ``ValueError`` naming the fix unless ``envs`` autoresets in the same step.

    Args:
        envs: the vector env.
        user: who needs it, for the message (e.g. ``"RolloutCollector"``).
    """
    if not isinstance(envs, gym.vector.VectorEnv):
        raise TypeError(
            f"{user} needs a gymnasium vector env, got {type(envs).__name__}; build one with "
            "parl.utils.make_vector_env(env_id, num_envs)"
        )
    mode = envs.metadata.get("autoreset_mode")
    if mode != gym.vector.AutoresetMode.SAME_STEP:
        raise ValueError(
            f"{user} needs a vector env that resets a finished sub-env in the same step, but "
            f"this one has autoreset_mode={mode}. Build it with "
            "parl.utils.make_vector_env(...) or pass "
            "autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP"
        )


class Episode(NamedTuple):
    """A finished training episode."""

    episodic_return: float
    """The undiscounted return (raw, when a ``RecordEpisodeStatistics`` sits below any reward
    normalisation in the sub-env; else the sum of the rewards the vector env returned)."""
    episodic_length: int
    """Steps in the episode."""
    env_step: int
    """The collector's :attr:`~RolloutCollector.env_steps` when it ended."""


class Transition(NamedTuple):
    """One step of ``N`` sub-envs; every row is a real transition."""

    obs: np.ndarray
    """Observations the actions were taken in, ``[N, ...]``."""
    actions: np.ndarray
    """The actions, ``[N, ...]``."""
    rewards: np.ndarray
    """Rewards, ``[N]``."""
    next_obs: np.ndarray
    """The observation each action led to, ``[N, ...]``: for a sub-env whose episode ended,
    the final observation of that episode (not the first of the next one)."""
    terminations: np.ndarray
    """``[N]`` bool: the episode ended in a terminal state (no bootstrap)."""
    truncations: np.ndarray
    """``[N]`` bool: the episode was cut (time limit); bootstrap from ``next_obs``."""
    infos: dict[str, Any]
    """The vector env's info dict of this step."""

    @property
    def dones(self) -> np.ndarray:
        """``[N]`` bool: the episode ended, either way."""
        return self.terminations | self.truncations


@dataclass
class Rollout:
    """``T`` steps of ``N`` sub-envs, arrays indexed ``[t, n]`` (CleanRL's layout).

    ``dones[t]`` is 1 where ``obs[t]`` is the first observation of a new episode (the step
    before ended one), the convention of :func:`parl.utils.compute_gae`; ``next_obs`` and
    ``next_dones`` are the same for the observation after the last step.
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    """``[T, N]`` float32."""
    terminations: np.ndarray
    """``[T, N]`` bool."""
    truncations: np.ndarray
    """``[T, N]`` bool."""
    dones: np.ndarray
    """``[T, N]`` float32, episode starts (see the class docstring)."""
    next_obs: np.ndarray
    next_dones: np.ndarray
    """``[N]`` float32."""
    final_obs: np.ndarray
    """``[K, ...]``: the final observations of the ``K`` steps that truncated without
    terminating, in the order of ``np.nonzero(rollout.bootstrap_mask)``."""
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    """What the policy returned besides actions, each ``[T, N, ...]``."""

    @property
    def bootstrap_mask(self) -> np.ndarray:
        """``[T, N]`` bool: steps whose reward needs the value of :attr:`final_obs`."""
        return self.truncations & ~self.terminations

    def bootstrapped_rewards(
        self, value_fn: Callable[[np.ndarray], np.ndarray], gamma: float
    ) -> np.ndarray:
        """Rewards with ``gamma * V(final_obs)`` added where an episode was truncated.

        Gymnasium resets a truncated episode, so GAE sees an episode end there; folding in the
        discounted value of the final observation restores the bootstrap. ``value_fn`` is
        called once, on all ``K`` final observations (not at all when ``K == 0``).

        Args:
            value_fn: maps observations ``[K, ...]`` to values ``[K]``.
            gamma: the discount factor.

        Raises:
            ValueError: if ``value_fn`` returns the wrong number of values.
        """
        rewards = self.rewards.copy()
        if len(self.final_obs):
            values = np.asarray(value_fn(self.final_obs), dtype=np.float32).reshape(-1)
            if values.shape != (len(self.final_obs),):
                raise ValueError(
                    f"value_fn returned {values.size} values for {len(self.final_obs)} final "
                    "observations; it must return one value per observation"
                )
            rewards[self.bootstrap_mask] += gamma * values
        return rewards

    def flatten(self, array: np.ndarray) -> np.ndarray:
        """Merge the time and env axes: ``[T, N, ...] -> [T * N, ...]``."""
        return array.reshape(-1, *array.shape[2:])


class RolloutCollector:
    """Steps a gymnasium vector env, keeps the current observations and episode statistics.

    Args:
        envs: a vector env with ``AutoresetMode.SAME_STEP`` (see :func:`make_vector_env`).
        seed: passed to the first ``envs.reset``.

    Examples:
        Off-policy, one step at a time::

            collector = RolloutCollector(make_vector_env("CartPole-v1", 4), seed=0)
            step = collector.step(agent.sample(collector.obs))
            rpm.append_batch(step.obs, step.actions, step.rewards, step.next_obs,
                             step.terminations)

        On-policy, 128 steps per update::

            rollout = collector.rollout(lambda obs: agent.sample(obs), 128)
            rewards = rollout.bootstrapped_rewards(agent.value, gamma=0.99)
            collector.log_episodes()
    """

    def __init__(self, envs: gym.vector.VectorEnv, *, seed: int | None = None) -> None:
        check_same_step_autoreset(envs, "RolloutCollector")
        self.envs = envs
        self.num_envs: int = envs.num_envs
        obs, _ = envs.reset(seed=seed)
        self.obs: np.ndarray = np.asarray(obs)
        """The current observations, ``[N, ...]``: what the next actions are taken in."""
        self.env_steps = 0
        """Transitions collected so far (``N`` per vector step)."""
        self._dones = np.zeros(self.num_envs, dtype=bool)
        self._returns = np.zeros(self.num_envs)
        # Lengths come from the vector step each episode started at: no per-step counting.
        self._vector_steps = 0
        self._starts = np.zeros(self.num_envs, dtype=np.int64)
        self._episodes: list[Episode] = []
        self._start = time.perf_counter()

    @property
    def sps(self) -> float:
        """Environment steps per second since the collector was created (``charts/SPS``)."""
        return self.env_steps / max(time.perf_counter() - self._start, 1e-9)

    def step(self, actions: Any) -> Transition:
        """Take one step of every sub-env with ``actions`` (``[N, ...]``)."""
        return self._step(actions)[0]

    def _step(self, actions: Any) -> tuple[Transition, bool]:
        """One vector step; also says whether any episode ended (``next_obs`` then differs)."""
        obs = self.obs
        next_obs, rewards, terminations, truncations, infos = self.envs.step(actions)
        self.env_steps += self.num_envs
        self._vector_steps += 1
        self._returns += rewards
        dones = terminations | truncations
        self.obs = real_next = np.asarray(next_obs)
        self._dones = dones
        ended_any = bool(dones.any())
        if ended_any:
            ended = np.flatnonzero(dones)
            real_next = self.obs.copy()
            for index in ended:
                real_next[index] = infos["final_obs"][index]
            self._record_episodes(ended, infos)
        transition = Transition(obs, actions, rewards, real_next, terminations, truncations, infos)
        return transition, ended_any

    def _record_episodes(self, ended: np.ndarray, infos: dict[str, Any]) -> None:
        returns = self._returns[ended]
        lengths = self._vector_steps - self._starts[ended]
        final_info = infos.get("final_info", {})
        if "episode" in final_info:
            # RecordEpisodeStatistics inside the sub-envs saw the raw rewards.
            recorded = final_info["_episode"][ended]
            returns = np.where(recorded, final_info["episode"]["r"][ended], returns)
            lengths = np.where(recorded, final_info["episode"]["l"][ended], lengths)
        self._episodes.extend(
            Episode(float(r), int(n), self.env_steps) for r, n in zip(returns, lengths, strict=True)
        )
        self._returns[ended] = 0.0
        self._starts[ended] = self._vector_steps

    def rollout(self, policy: Policy, num_steps: int) -> Rollout:
        """Collect ``num_steps`` steps of every sub-env with ``policy``.

        Args:
            policy: maps observations ``[N, ...]`` to actions, or to ``(actions, extras)``
                with ``extras`` a dict of ``[N, ...]`` arrays (values, log-probs, ...), stored
                as ``[T, N, ...]`` in :attr:`Rollout.extras`.
            num_steps: ``T``, steps per sub-env.

        Raises:
            TypeError: if ``extras`` is not a dict of arrays.
        """
        num_steps = positive_int("num_steps", num_steps)
        n = self.num_envs
        first_dones = self._dones
        rewards = np.empty((num_steps, n), dtype=np.float32)
        terminations = np.empty((num_steps, n), dtype=bool)
        truncations = np.empty((num_steps, n), dtype=bool)
        obs_buf: np.ndarray | None = None
        act_buf: np.ndarray | None = None
        extras: dict[str, np.ndarray] = {}
        final_obs: list[np.ndarray] = []
        for t in range(num_steps):
            actions, step_extras = _split_policy_output(policy(self.obs))
            if obs_buf is None or act_buf is None:
                obs_buf = np.empty((num_steps, *self.obs.shape), dtype=self.obs.dtype)
                act_buf = np.empty((num_steps, *np.shape(actions)), np.asarray(actions).dtype)
                extras = {
                    key: np.empty((num_steps, *np.shape(v)), np.asarray(v).dtype)
                    for key, v in step_extras.items()
                }
            obs_buf[t] = self.obs
            act_buf[t] = actions
            for key, value in step_extras.items():
                extras[key][t] = value
            step, ended_any = self._step(actions)
            rewards[t] = step.rewards
            terminations[t], truncations[t] = step.terminations, step.truncations
            if ended_any:
                final_obs.extend(step.next_obs[step.truncations & ~step.terminations])
        assert obs_buf is not None and act_buf is not None
        # obs[t] starts an episode where step t-1 ended one (before the rollout: first_dones).
        dones = np.empty((num_steps, n), dtype=np.float32)
        dones[0] = first_dones
        np.logical_or(terminations[:-1], truncations[:-1], out=dones[1:], casting="unsafe")
        return Rollout(
            obs=obs_buf,
            actions=act_buf,
            rewards=rewards,
            terminations=terminations,
            truncations=truncations,
            dones=dones,
            next_obs=self.obs,
            next_dones=self._dones.astype(np.float32),
            final_obs=np.asarray(final_obs, dtype=obs_buf.dtype).reshape(-1, *obs_buf.shape[2:]),
            extras=extras,
        )

    def pop_episodes(self) -> list[Episode]:
        """Return the episodes finished since the last call, oldest first, and forget them."""
        episodes, self._episodes = self._episodes, []
        return episodes

    def log_episodes(self) -> list[Episode]:
        """Log finished episodes (``charts/episodic_return``, ``charts/episodic_length``).

        Each episode is logged at the env step it ended; see :mod:`parl.utils.summary`.

        Returns:
            The episodes logged (as :meth:`pop_episodes`).
        """
        episodes = self.pop_episodes()
        for episode in episodes:
            metrics = {EPISODIC_RETURN: episode.episodic_return}
            metrics[EPISODIC_LENGTH] = episode.episodic_length
            summary.add_scalars(metrics, episode.env_step)
        return episodes


def _split_policy_output(output: Any) -> tuple[Any, Mapping[str, Any]]:
    if isinstance(output, tuple) and len(output) == 2 and isinstance(output[1], Mapping):
        return output[0], output[1]
    if isinstance(output, tuple):
        raise TypeError(
            "the policy returned a tuple that is not (actions, extras_dict); return the actions "
            "alone, or (actions, {'value': v, 'logprob': lp, ...})"
        )
    return output, {}
