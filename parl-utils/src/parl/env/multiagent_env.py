"""Multi-agent environments: PettingZoo's parallel API as lists per agent, and PARL 2.x's ``MAenv``.

:class:`ParallelEnvAdapter` puts any PettingZoo parallel env behind one fixed agent order
(``possible_agents``): ``reset`` and ``step`` take and give lists with one entry per agent, as
PARL's multi-agent algorithms index agents by position. It keeps ``terminated`` and
``truncated`` apart (gymnasium's API), gives every agent an entry even after it has left the
episode (a zero observation, reward 0, ``terminated`` true, ``alive`` false in its info), and
offers a global :meth:`~ParallelEnvAdapter.state` for centralised critics and mixers (QMIX,
MAPPO): the env's own ``state()`` where it has one, else the agents' observations concatenated.

:class:`ParticleEnv` builds the multi-agent particle environments (``mpe2``, which PettingZoo
1.25 split out of ``pettingzoo.mpe``) with PARL 2.x's settings: 25 steps per episode, and for
continuous actions the agents' ``[-1, 1]`` mapped onto the env's bounds. :class:`MAenv` is
PARL 2.x's class of the same scenarios, with PARL's call shapes (``reset()`` gives ``obs_n``,
``step`` gives ``obs_n, reward_n, done_n, info_n``), so PARL's multi-agent programs run as
written.

:class:`TeamEnv` shows a whole team as one gymnasium env (a tuple of observations in, a tuple
of actions out, the agents' rewards summed), so that the single-agent tools (vector envs,
``parl.utils.evaluate``, ``EvalTracker``) evaluate a team.

Install with ``pip install "parl-utils[multiagent]"``.

Examples:
    >>> from parl.env.multiagent_env import MAenv, ParticleEnv
    >>> env = ParticleEnv("simple_spread")
    >>> env.n, env.obs_shape_n, env.act_shape_n
    (3, [18, 18, 18], [5, 5, 5])
    >>> obs_n, info_n = env.reset(seed=0)
    >>> obs_n, reward_n, terminated_n, truncated_n, info_n = env.step([0, 1, 2])
    >>> parl_env = MAenv("simple_spread")  # PARL 2.x's shapes
    >>> obs_n = parl_env.reset()
    >>> obs_n, reward_n, done_n, info_n = parl_env.step([0, 1, 2])
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = [
    "SCENARIOS",
    "MAenv",
    "ParallelEnvAdapter",
    "ParticleEnv",
    "TeamEnv",
    "with_agent_ids",
]

# PARL 2.x's scenarios, each with the mpe2 module and the keyword arguments PARL built it with.
SCENARIOS: dict[str, tuple[str, dict[str, Any]]] = {
    "simple": ("simple_v3", {}),
    "simple_adversary": ("simple_adversary_v3", {"N": 2}),
    "simple_crypto": ("simple_crypto_v3", {}),
    "simple_push": ("simple_push_v3", {}),
    "simple_speaker_listener": ("simple_speaker_listener_v4", {}),
    "simple_spread": ("simple_spread_v3", {"N": 3, "local_ratio": 0}),
    "simple_tag": ("simple_tag_v3", {"num_good": 1, "num_adversaries": 3, "num_obstacles": 2}),
    "simple_world_comm": (
        "simple_world_comm_v3",
        {"num_good": 2, "num_adversaries": 4, "num_obstacles": 1, "num_food": 2, "num_forests": 2},
    ),
}
"""PARL 2.x's particle scenarios: name → (mpe2 module, constructor arguments)."""

_INSTALL_HINT = 'install them with: pip install "parl-utils[multiagent]"'


def space_size(space: gym.Space[Any]) -> int | tuple[int, ...]:
    """PARL's shape of a space: ``n`` of a Discrete, the length of a 1-D Box, else its shape."""
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.Box):
        return int(space.shape[0]) if len(space.shape) == 1 else tuple(space.shape)
    raise TypeError(
        f"multi-agent spaces must be Discrete or Box, got {space}; wrap the env so that each "
        "agent's observation and action space is one of those"
    )


class ParallelEnvAdapter:
    """A PettingZoo parallel env seen as lists, one entry per agent in a fixed order.

    Args:
        env: a ``pettingzoo.ParallelEnv`` whose ``possible_agents`` is the full roster.
        pad_observations: zero-pad every agent's 1-D observation to the longest, so that one
            network shared by agents that see different things (the speaker's 3 numbers and
            the listener's 11 in ``simple_speaker_listener``) takes them all, as EPyMARL does;
            ``observation_space`` and ``obs_shape_n`` then describe the padded observations.

    Attributes:
        agents_name: the agents, in the order of every list (``possible_agents``).
        n: the number of agents.
        observation_space, action_space: one space per agent.
        obs_shape_n, act_shape_n: PARL's per-agent sizes (see :func:`space_size`).
        state_space: the space of :meth:`state`.
    """

    def __init__(self, env: Any, pad_observations: bool = False) -> None:
        roster = list(getattr(env, "possible_agents", None) or [])
        if not roster:
            raise ValueError(
                f"{type(env).__name__} has no possible_agents; pass a PettingZoo ParallelEnv "
                "(e.g. mpe2.simple_spread_v3.parallel_env())"
            )
        self.env = env
        self.agents_name: list[str] = roster
        self.n = len(roster)
        own_spaces = [env.observation_space(agent) for agent in roster]
        self.action_space = [env.action_space(agent) for agent in roster]
        self.act_shape_n = [space_size(space) for space in self.action_space]
        self._has_state = callable(getattr(env, "state", None)) and hasattr(env, "state_space")
        if self._has_state:
            self.state_space: gym.Space[Any] = env.state_space
        else:
            size = sum(int(np.prod(space.shape)) for space in own_spaces)
            self.state_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self._own_obs = [np.zeros(space.shape, np.float32) for space in own_spaces]
        self.observation_space = _padded(own_spaces) if pad_observations else own_spaces
        self.obs_shape_n = [space_size(space) for space in self.observation_space]
        self._alive = [False] * self.n
        self._started = False

    @property
    def alive(self) -> list[bool]:
        """Whether each agent is still in the episode (a dead or finished agent is not)."""
        return list(self._alive)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[np.ndarray], list[dict[str, Any]]]:
        """Start an episode; returns ``(obs_n, info_n)``."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self._alive = [agent in obs for agent in self.agents_name]
        self._started = True
        return self._lists(obs, infos)

    def step(
        self, action_n: Sequence[Any]
    ) -> tuple[list[np.ndarray], list[float], list[bool], list[bool], list[dict[str, Any]]]:
        """Act for every agent; returns ``(obs_n, reward_n, terminated_n, truncated_n, info_n)``.

        ``action_n`` has one action per agent, in :attr:`agents_name` order; the actions of
        agents no longer alive are ignored. An agent that has left the episode gets a zero
        observation, reward 0 and ``terminated`` true (``truncated`` where the episode was cut).
        """
        if len(action_n) != self.n:
            raise ValueError(
                f"step needs one action per agent ({self.n}: {self.agents_name}), got "
                f"{len(action_n)}"
            )
        actions = {
            agent: self._env_action(index, action_n[index])
            for index, agent in enumerate(self.agents_name)
            if self._alive[index]
        }
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        obs_n, info_n = self._lists(obs, infos)
        reward_n = [float(rewards.get(agent, 0.0)) for agent in self.agents_name]
        truncated_n = [bool(truncations.get(agent, False)) for agent in self.agents_name]
        terminated_n = [
            bool(terminations.get(agent, not alive and not truncated))
            for agent, alive, truncated in zip(
                self.agents_name, self._alive, truncated_n, strict=True
            )
        ]
        live = set(self.env.agents)
        self._alive = [agent in live for agent in self.agents_name]
        return obs_n, reward_n, terminated_n, truncated_n, info_n

    def state(self) -> np.ndarray:
        """The global state: the env's ``state()``, or the last observations concatenated."""
        if not self._started:
            raise RuntimeError("call reset() before state(): there is no episode yet")
        if self._has_state:
            return np.asarray(self.env.state(), dtype=np.float32)
        return np.concatenate([obs.reshape(-1) for obs in self._own_obs]).astype(np.float32)

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()

    def available_actions(self) -> np.ndarray:
        """``[n, max(act_shape_n)]`` float32: 1 for each action an agent has, 0 past its own,
        for agents that share one network with the widest action head (the speaker's 3
        words beside the listener's 5 moves); Discrete action spaces only."""
        if not all(isinstance(space, gym.spaces.Discrete) for space in self.action_space):
            raise ValueError(
                f"available_actions needs Discrete action spaces, got {self.action_space}; "
                "build the env with discrete actions (continuous_actions=False)"
            )
        counts = np.array(self.act_shape_n)
        return (np.arange(counts.max()) < counts[:, None]).astype(np.float32)

    def _env_action(self, index: int, action: Any) -> Any:
        """The action as the env takes it (an adapter subclass maps PARL's conventions)."""
        return action

    def _lists(
        self, obs: dict[str, Any], infos: dict[str, Any]
    ) -> tuple[list[np.ndarray], list[dict[str, Any]]]:
        obs_n, info_n = [], []
        for index, agent in enumerate(self.agents_name):
            if agent in obs:
                self._own_obs[index] = np.asarray(obs[agent], dtype=np.float32)
            else:
                self._own_obs[index] = np.zeros_like(self._own_obs[index])
            obs_n.append(self._as_observed(index))
            info_n.append({**infos.get(agent, {}), "alive": agent in obs})
        return obs_n, info_n

    def _as_observed(self, index: int) -> np.ndarray:
        """Agent ``index``'s last observation in its ``observation_space`` (padded or not)."""
        own, shape = self._own_obs[index], self.observation_space[index].shape
        if shape is None or own.shape == shape:
            return own
        return np.pad(own, (0, shape[0] - own.shape[0]))


def with_agent_ids(team_obs: np.ndarray) -> np.ndarray:
    """Each agent's observation followed by its one-hot id, as one network shared by the
    agents takes them: ``[..., n, obs_dim]`` → ``[..., n, obs_dim + n]`` float32."""
    team = np.asarray(team_obs, np.float32)
    n = team.shape[-2]
    ids = np.broadcast_to(np.eye(n, dtype=np.float32), (*team.shape[:-1], n))
    return np.concatenate([team, ids], axis=-1)


def _padded(spaces: Sequence[gym.Space[Any]]) -> list[gym.Space[Any]]:
    """The 1-D Box observation spaces zero-padded to the longest of them."""
    boxes = [space for space in spaces if isinstance(space, gym.spaces.Box)]
    if len(boxes) != len(spaces) or any(len(box.shape) != 1 for box in boxes):
        raise ValueError(
            f"pad_observations needs 1-D Box observations, got {list(spaces)}; flatten them first "
            "(gymnasium.wrappers.FlattenObservation on each agent's env)"
        )
    size = max(box.shape[0] for box in boxes)
    padded: list[gym.Space[Any]] = []
    for space in boxes:
        extra = size - space.shape[0]
        low = np.concatenate([space.low, np.zeros(extra, space.dtype)])
        high = np.concatenate([space.high, np.zeros(extra, space.dtype)])
        padded.append(gym.spaces.Box(low, high, dtype=space.dtype))
    return padded


class ParticleEnv(ParallelEnvAdapter):
    """One of PARL 2.x's particle scenarios (``simple_spread``, …) as a list-per-agent env.

    gymnasium's call shapes with one list entry per agent (``reset`` → ``obs_n, info_n``,
    ``step`` → ``obs_n, reward_n, terminated_n, truncated_n, info_n``) and PARL's action
    conventions: a discrete action may be an int or a vector (one-hot or logits, its argmax is
    taken); a continuous one lies in ``[-1, 1]`` and is mapped onto the env's bounds.

    Args:
        scenario_name: a key of :data:`SCENARIOS`.
        continuous_actions: Box actions in ``[-1, 1]`` instead of Discrete ones.
        max_cycles: steps per episode (PARL: 25); the last step is a truncation.
        pad_observations: zero-pad the agents' observations to the longest (see
            :class:`ParallelEnvAdapter`).

    Raises:
        ValueError: an unknown scenario (the known ones are listed).
        ImportError: mpe2 is not installed.
    """

    def __init__(
        self,
        scenario_name: str,
        continuous_actions: bool = False,
        max_cycles: int = 25,
        pad_observations: bool = False,
    ) -> None:
        super().__init__(
            _particle_env(scenario_name, continuous_actions, max_cycles), pad_observations
        )
        self.continuous_actions = continuous_actions

    def _env_action(self, index: int, action: Any) -> Any:
        space = self.action_space[index]
        array = np.asarray(action)
        if isinstance(space, gym.spaces.Discrete):
            return int(np.argmax(array)) if array.ndim else int(array)
        assert isinstance(space, gym.spaces.Box)
        if array.shape != space.shape or not np.all(np.abs(array) <= 1.0 + 1e-3):
            raise ValueError(
                f"agent {self.agents_name[index]} needs an action of shape {space.shape} in "
                f"[-1, 1], got {array.tolist()}; squash the policy's output with tanh"
            )
        mapped = space.low + (array + 1.0) * (space.high - space.low) / 2.0
        return np.clip(mapped, space.low, space.high).astype(space.dtype)


class MAenv:
    """PARL 2.x's ``MAenv``: a particle scenario with PARL's call shapes, for PARL's programs.

    ``reset()`` returns ``obs_n`` and ``step(action_n)`` returns ``obs_n, reward_n, done_n,
    info_n``, lists with one entry per agent, as PARL 2.x's MADDPG programs unpack them;
    ``done_n[i]`` is true when agent ``i`` terminated or the episode was cut at
    ``max_cycles`` (each ``info_n[i]`` says which: ``"TimeLimit.truncated"``, as gym did).
    The attributes are PARL's: ``n``, ``agents_name``, ``observation_space`` and
    ``action_space`` (one space per agent), ``obs_shape_n``, ``act_shape_n`` and
    ``continuous_actions``. New code that stores transitions should use
    :class:`ParticleEnv`, which keeps ``terminated`` and ``truncated`` apart.

    Args:
        scenario_name: a key of :data:`SCENARIOS`.
        continuous_actions: Box actions in ``[-1, 1]`` instead of Discrete ones.
        max_cycles: steps per episode (PARL: 25).

    Raises:
        ValueError: an unknown scenario (the known ones are listed).
        ImportError: mpe2 is not installed.
    """

    def __init__(
        self, scenario_name: str, continuous_actions: bool = False, max_cycles: int = 25
    ) -> None:
        self.env = ParticleEnv(scenario_name, continuous_actions, max_cycles)
        self.continuous_actions = continuous_actions
        self.n = self.env.n
        self.agents_name = self.env.agents_name
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.obs_shape_n = self.env.obs_shape_n
        self.act_shape_n = self.env.act_shape_n

    def reset(self, seed: int | None = None) -> list[np.ndarray]:
        """Start an episode; returns ``obs_n``, one observation per agent."""
        obs_n, _ = self.env.reset(seed=seed)
        return obs_n

    def step(
        self, action_n: Sequence[Any]
    ) -> tuple[list[np.ndarray], list[float], list[bool], list[dict[str, Any]]]:
        """Act for every agent; returns ``(obs_n, reward_n, done_n, info_n)``."""
        obs_n, reward_n, terminated_n, truncated_n, info_n = self.env.step(action_n)
        done_n = [t or u for t, u in zip(terminated_n, truncated_n, strict=True)]
        for info, truncated in zip(info_n, truncated_n, strict=True):
            info["TimeLimit.truncated"] = truncated
        return obs_n, reward_n, done_n, info_n

    def render(self) -> Any:
        """Render the scenario (the mpe2 env's ``render``)."""
        return self.env.env.render()

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()


class TeamEnv(gym.Env[tuple[np.ndarray, ...], tuple[Any, ...]]):
    """A multi-agent env as one gymnasium env: the team is the player.

    Observations and actions are tuples with one entry per agent (``Tuple`` spaces, which
    gymnasium's vector envs batch per agent); the reward is the sum of the agents' rewards
    (PARL's episode reward for the particle scenarios); the episode terminates when every agent
    has terminated and is truncated when any agent is.

    Args:
        env: a :class:`ParallelEnvAdapter` (e.g. a :class:`ParticleEnv`).
    """

    # gymnasium declares `metadata` as an instance attribute, so no ClassVar here.
    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self, env: ParallelEnvAdapter) -> None:
        self.env = env
        self.observation_space = gym.spaces.Tuple(env.observation_space)
        self.action_space = gym.spaces.Tuple(env.action_space)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[np.ndarray, ...], dict[str, Any]]:
        """Start an episode; returns the agents' observations as a tuple and an empty info."""
        super().reset(seed=seed)
        obs_n, _ = self.env.reset(seed=seed, options=options)
        return tuple(obs_n), {}

    def step(
        self, action: Sequence[Any]
    ) -> tuple[tuple[np.ndarray, ...], float, bool, bool, dict[str, Any]]:
        """Act for the team; the reward is the sum of the agents' rewards."""
        obs_n, reward_n, terminated_n, truncated_n, _ = self.env.step(list(action))
        return tuple(obs_n), float(sum(reward_n)), all(terminated_n), any(truncated_n), {}

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()


def _particle_env(scenario_name: str, continuous_actions: bool, max_cycles: int) -> Any:
    """The mpe2 parallel env of a PARL scenario, built with PARL's settings."""
    if scenario_name not in SCENARIOS:
        raise ValueError(
            f"unknown particle scenario {scenario_name!r}; choose one of {sorted(SCENARIOS)}"
        )
    module_name, options = SCENARIOS[scenario_name]
    try:
        module = importlib.import_module(f"mpe2.{module_name}")
    except ImportError as exc:
        raise ImportError(
            f"the particle scenario {scenario_name!r} needs PettingZoo and mpe2; {_INSTALL_HINT}"
        ) from exc
    return module.parallel_env(
        max_cycles=max_cycles, continuous_actions=continuous_actions, **options
    )
