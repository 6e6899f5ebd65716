"""Numpy-facing agents: :class:`MADDPGAgent` (one per agent), :class:`QMIXAgent`,
:class:`COMAAgent` and :class:`MAPPOAgent` (a team each), and :class:`AgentTeam` (agents of one
team as one).

Each runs on its algorithm's framework (paddle or torch) and is where data crosses between
numpy and tensors; ``device=`` moves the algorithm (torch)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from parl.core.base import AgentBase
from parl.core.checkpoint import check_backend
from parl.core.errors import CheckpointError
from parl.core.neutral import Agent
from parl.core.tensor_files import read_tensor_file, write_tensor_file
from parl.core.validation import positive_int
from parl.utils import ReplayMemory

import numpy as np
from gymnasium.wrappers.utils import RunningMeanStd
from numpy.typing import ArrayLike

from parl_algos_marl.coma import COMA, COMAStats
from parl_algos_marl.maddpg import MADDPG
from parl_algos_marl.mappo import MAPPO
from parl_algos_marl.qmix import QMIX
from parl_algos_pg import PPOStats

__all__ = ["AgentTeam", "COMAAgent", "MADDPGAgent", "MAPPOAgent", "QMIXAgent"]

TEAM_WEIGHTS_FORMAT = "parl.team-weights"


class MADDPGAgent(Agent):
    """One MADDPG agent with its own replay memory, as PARL's MPE example agent.

    Every agent stores its own transitions (actions as vectors: relaxed one-hots or squashed
    Gaussians, as :meth:`sample` gives them); :meth:`learn` samples one set of indices and reads
    every agent's memory at them, so the agents' memories must be filled in step. The critic's
    target is ``r_i + gamma·(1 - terminated)·Q_i'(obs'_n, a'_n)`` with ``a'_j`` sampled from
    agent ``j``'s target policy; a truncated episode is stored with ``terminal=False`` so that
    its last step bootstraps.

    Args:
        algorithm: this agent's :class:`~parl_algos_marl.maddpg.MADDPG`.
        obs_dim_n, act_dim_n: every agent's observation and action sizes (``MAenv``'s
            ``obs_shape_n`` and ``act_shape_n``).
        batch_size: transitions per learn step (PARL: 1024).
        memory_size: the replay memory's capacity (PARL: 1e6).
        min_memory_size: transitions stored before learning starts (PARL: 25 batches).
        learn_every: learn on every ``learn_every``-th call of :meth:`learn` (PARL: 100).
        seed: seed of the replay memory's sampling.
        device: torch only: move the algorithm there (``"cpu"``, ``"cuda"``, ...); None keeps
            it where it is.
    """

    alg: MADDPG
    checkpoint_state = ("global_train_step",)

    def __init__(
        self,
        algorithm: MADDPG,
        obs_dim_n: Sequence[int],
        act_dim_n: Sequence[int],
        batch_size: int = 1024,
        memory_size: int = 1_000_000,
        min_memory_size: int | None = None,
        learn_every: int = 100,
        seed: int | None = None,
        device: Any = None,
    ) -> None:
        if not isinstance(algorithm, MADDPG):
            raise TypeError(f"MADDPGAgent needs a MADDPG algorithm, got {type(algorithm).__name__}")
        if len(obs_dim_n) != algorithm.n or len(act_dim_n) != algorithm.n:
            raise ValueError(
                f"obs_dim_n and act_dim_n need one size per agent ({algorithm.n}), got "
                f"{list(obs_dim_n)} and {list(act_dim_n)}"
            )
        super().__init__(algorithm, device=device)
        self.agent_index = algorithm.agent_index
        self.n = algorithm.n
        self.batch_size = batch_size
        self.min_memory_size = batch_size * 25 if min_memory_size is None else min_memory_size
        self.learn_every = learn_every
        self.global_train_step = 0
        index = self.agent_index
        self.rpm = ReplayMemory(memory_size, obs_dim_n[index], act_dim_n[index], seed=seed)

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """The greedy action (a one-hot, or ``tanh(mean)``) for one observation or a batch."""
        return self.to_numpy(self.alg.predict(self.to_tensor(obs)))

    def sample(self, obs: ArrayLike, use_target_model: bool = False) -> np.ndarray:
        """An exploratory action, shaped as :meth:`predict`'s."""
        return self.to_numpy(self.alg.sample(self.to_tensor(obs), use_target_model))

    def add_experience(
        self, obs: ArrayLike, act: ArrayLike, reward: float, next_obs: ArrayLike, terminal: bool
    ) -> None:
        """Store one transition of this agent (``terminal``: terminated, not truncated)."""
        self.rpm.append(obs, act, reward, next_obs, terminal)

    def learn(self, agents: Sequence[MADDPGAgent]) -> float | None:
        """Count a call; every ``learn_every``-th one with enough experience, take a step.

        Args:
            agents: every agent, in agent order (this one included).

        Returns:
            The critic's loss, or None where no step was taken.
        """
        if len(agents) != self.n or agents[self.agent_index] is not self:
            raise ValueError(
                f"learn needs all {self.n} agents in agent order with this one at index "
                f"{self.agent_index}, got {len(agents)} agents"
            )
        self.global_train_step += 1
        if self.global_train_step % self.learn_every or self.rpm.size() < self.min_memory_size:
            return None
        index = self.rpm.make_index(self.batch_size)
        batches = [agent.rpm.sample_batch_by_index(index) for agent in agents]
        obs_n = [batch.obs for batch in batches]
        act_n = [batch.action for batch in batches]
        next_obs_n = [batch.next_obs for batch in batches]
        own = batches[self.agent_index]
        next_act_n = [
            agent.sample(next_obs, use_target_model=True)
            for agent, next_obs in zip(agents, next_obs_n, strict=True)
        ]
        target_q = self.critic_target(own.reward, own.terminal, next_obs_n, next_act_n)
        return float(self.alg.learn(obs_n, act_n, target_q))

    def critic_target(
        self,
        reward: ArrayLike,
        terminal: ArrayLike,
        next_obs_n: Sequence[ArrayLike],
        next_act_n: Sequence[ArrayLike],
    ) -> np.ndarray:
        """``r + gamma·(1 - terminal)·Q_i'(obs'_n, a'_n)`` ``[B]``, with the target critic."""
        next_q = self.to_numpy(self.alg.Q(next_obs_n, next_act_n, use_target_model=True))
        done = np.asarray(terminal, np.float32)
        return np.asarray(reward, np.float32) + self.alg.config.gamma * (1.0 - done) * next_q


class _RecurrentTeamAgent(Agent):
    """What QMIX's and COMA's agents share: the team's recurrent hidden state, an exploration
    weight annealed linearly per :meth:`sample` call, target updates every
    ``update_target_interval`` learn calls (copies, or soft ones with ``target_tau`` < 1), and
    running reward statistics."""

    checkpoint_state = ("learn_steps", "sample_steps", "rng", "reward_moments")

    def __init__(
        self,
        algorithm: Any,
        exploration: tuple[float, float, int],
        update_target_interval: int,
        seed: int | None,
        standardise_rewards: bool,
        device: Any,
        target_tau: float = 1.0,
    ) -> None:
        if not 0.0 < target_tau <= 1.0:
            raise ValueError(
                f"target_tau must be in (0, 1] (1 copies the networks into their targets, "
                f"e.g. 0.01 moves the targets 1% of the way), got {target_tau}"
            )
        super().__init__(algorithm, device=device)
        self.n_agents = algorithm.n_agents
        self.exploration_start, self.exploration_end, self.exploration_steps = exploration
        self.update_target_interval = positive_int("update_target_interval", update_target_interval)
        self.target_tau = float(target_tau)
        self.learn_steps = 0
        self.sample_steps = 0
        self.rng = np.random.default_rng(seed)
        self.standardise_rewards = standardise_rewards
        self.reward_moments = np.array([0.0, 1.0, 0.0])
        """Mean, variance and count of the rewards learnt from (with ``standardise_rewards``)."""
        self._hidden: Any = None

    @property
    def epsilon(self) -> float:
        """The exploration weight of the next :meth:`sample` call."""
        done = min(1.0, self.sample_steps / self.exploration_steps)
        return self.exploration_start + done * (self.exploration_end - self.exploration_start)

    def reset_agent(self) -> None:
        """Forget the hidden state: the next call starts an episode."""
        self._hidden = None

    def _count_learn_step(self) -> None:
        """Count a learn call; every ``update_target_interval``-th, move the targets
        ``target_tau`` of the way to the networks (1: a copy)."""
        self.learn_steps += 1
        if self.learn_steps % self.update_target_interval == 0:
            self.alg.sync_target(1.0 - self.target_tau)


class QMIXAgent(_RecurrentTeamAgent):
    """Acts for a team with QMIX's recurrent agent network, and learns from episode batches.

    The agent keeps the team's hidden state between calls, as PARL's QMIX agent: call
    :meth:`reset_agent` at the start of every episode. :meth:`sample` is epsilon-greedy among
    the available actions, with epsilon annealed linearly per call; :meth:`learn` copies the
    networks into their targets every ``update_target_interval`` learn calls (PARL's), or with
    ``target_tau`` < 1 moves them that fraction of the way (EPyMARL's soft updates: interval 1,
    tau 0.01).

    With ``standardise_rewards`` (EPyMARL's option; PARL has none), :meth:`learn` feeds QMIX
    rewards minus their running mean, over their running standard deviation, both over every
    real (unpadded) step learnt from so far. Rewards with a large common offset, such as the
    particle envs' negative distances, otherwise make ``Q_tot`` about ``offset / (1 - gamma)``
    and the agents' small per-action differences are lost in fitting it: the greedy policy
    then barely depends on the state. Subtracting the mean changes which policy is optimal when
    episodes can end early (it removes a per-step penalty or bonus); with fixed-length
    episodes, as in the particle envs, it does not.

    Args:
        algorithm: a :class:`~parl_algos_marl.qmix.QMIX`.
        n_actions: actions per agent.
        exploration_start, exploration_end: epsilon's first and last value.
        exploration_steps: :meth:`sample` calls over which epsilon anneals.
        update_target_interval: learn calls between target updates (PARL: 200).
        seed: seed of the exploration generator.
        standardise_rewards: standardise rewards with running statistics (see above).
        device: torch only: move the algorithm there (``"cpu"``, ``"cuda"``, ...); None keeps
            it where it is.
        target_tau: the fraction of the way each target update moves the targets, in (0, 1]:
            1 copies (PARL's).
    """

    alg: QMIX

    def __init__(
        self,
        algorithm: QMIX,
        n_actions: int,
        exploration_start: float = 1.0,
        exploration_end: float = 0.05,
        exploration_steps: int = 50_000,
        update_target_interval: int = 200,
        seed: int | None = None,
        standardise_rewards: bool = False,
        device: Any = None,
        target_tau: float = 1.0,
    ) -> None:
        if not isinstance(algorithm, QMIX):
            raise TypeError(f"QMIXAgent needs a QMIX algorithm, got {type(algorithm).__name__}")
        super().__init__(
            algorithm,
            (exploration_start, exploration_end, exploration_steps),
            update_target_interval,
            seed,
            standardise_rewards,
            device,
            target_tau,
        )
        self.n_actions = n_actions

    def predict(self, obs: ArrayLike, available_actions: ArrayLike | None = None) -> np.ndarray:
        """Greedy actions ``[n_agents]`` for the team's observations ``[n_agents, obs_dim]``
        (or ``[B, n_agents]`` for a batch of teams), among the available ones."""
        q = self._local_q(obs)
        if available_actions is not None:
            q = np.where(np.asarray(available_actions).reshape(q.shape) > 0, q, -np.inf)
        return q.argmax(axis=-1)

    def sample(self, obs: ArrayLike, available_actions: ArrayLike | None = None) -> np.ndarray:
        """Epsilon-greedy actions, shaped as :meth:`predict`'s."""
        epsilon = self.epsilon
        self.sample_steps += 1
        greedy = self.predict(obs, available_actions)
        allowed = (
            np.ones((*greedy.shape, self.n_actions))
            if available_actions is None
            else np.asarray(available_actions, np.float64).reshape(*greedy.shape, -1)
        )
        noise = self.rng.random(allowed.shape) * allowed
        explore = self.rng.random(greedy.shape) < epsilon
        return np.where(explore, noise.argmax(axis=-1), greedy)

    def learn(self, *batch: ArrayLike, lr: float | None = None) -> tuple[float, float]:
        """One QMIX step on an :class:`~parl_algos_marl.episode_buffer.EpisodeBatch` (or its
        seven arrays); returns ``(loss, mean_td_error)``. ``lr`` sets the learning rate of this
        step and the next ones (an annealing schedule); None keeps it. A batch QMIX refuses
        leaves the rate as it was."""
        arrays, moments = list(batch), self.reward_moments
        if self.standardise_rewards and len(arrays) == 7:
            arrays, moments = self._standardised(arrays)
        previous = self.alg.get_lr()
        if lr is not None:
            self.alg.set_lr(lr)
        try:
            loss, td_error = self.alg.learn(*arrays)
        except Exception:
            self.alg.set_lr(previous)
            raise
        self.reward_moments = moments  # only once QMIX accepted the batch
        self._count_learn_step()
        return float(loss), float(td_error)

    def _standardised(self, batch: Sequence[ArrayLike]) -> tuple[list[Any], np.ndarray]:
        """The batch with standardised rewards, and the moments including its real steps."""
        return standardised_rewards(batch, self.reward_moments)

    def _local_q(self, obs: ArrayLike) -> np.ndarray:
        array = np.asarray(obs, np.float32)
        if array.ndim < 2 or array.shape[-2] != self.n_agents:
            raise ValueError(
                f"observations must be [n_agents, obs_dim] or [B, n_agents, obs_dim] with "
                f"n_agents={self.n_agents}, got shape {array.shape}"
            )
        flat = array.reshape(-1, array.shape[-1])
        if self._hidden is None or self._hidden.shape[0] != flat.shape[0]:
            init = self.alg.model.init_hidden().reshape([1, -1])
            self._hidden = self.ops.broadcast_to(init, [flat.shape[0], init.shape[1]])
        q, self._hidden = self.alg.predict_local_q(self.to_tensor(flat), self._hidden)
        return self.to_numpy(q).reshape(*array.shape[:-1], -1)


def standardised_rewards(
    batch: Sequence[ArrayLike], moments: np.ndarray
) -> tuple[list[Any], np.ndarray]:
    """An episode batch (an :class:`~parl_algos_marl.EpisodeBatch`'s seven arrays) with its
    rewards standardised by running moments ``[mean, var, count]`` updated with its real
    (unpadded) steps; returns the batch and the updated moments (EPyMARL's
    ``standardise_rewards``). A batch whose reward and padding sizes differ is returned as it
    is, for the learner to name the mismatch."""
    reward = np.asarray(batch[2], np.float32)
    filled = np.asarray(batch[6], np.float32)
    if reward.size != filled.size:
        return list(batch), moments
    stats = RunningMeanStd(shape=())
    stats.mean, stats.var, stats.count = moments
    real = reward.reshape(filled.shape)[filled == 0].astype(np.float64)
    if real.size:  # else the learner rejects the batch: nothing to learn from
        stats.update(real)
    standardised = (reward - stats.mean) / np.sqrt(stats.var + 1e-8)
    return [*batch[:2], standardised, *batch[3:]], np.array(
        [stats.mean, stats.var, stats.count], np.float64
    )


class COMAAgent(_RecurrentTeamAgent):
    """Acts for a team with COMA's recurrent policy and learns from on-policy episode batches.

    The agent keeps the team's hidden state between calls, as :class:`QMIXAgent`: call
    :meth:`reset_agent` at the start of every episode. :meth:`sample` draws each agent's action
    from its policy mixed with a uniform choice among the available actions, with weight
    :attr:`epsilon` annealed linearly per call (PARL: 0.5 to 0.02; EPyMARL: none, the
    default); :meth:`learn` passes the same epsilon to :meth:`COMA.learn
    <parl_algos_marl.coma.COMA.learn>` and copies the model into the target every
    ``update_target_interval`` learn calls. ``standardise_rewards`` is :class:`QMIXAgent`'s
    (EPyMARL's COMA uses it on the particle envs).

    Args:
        algorithm: a :class:`~parl_algos_marl.coma.COMA`.
        exploration_start, exploration_end: epsilon's first and last value.
        exploration_steps: :meth:`sample` calls over which epsilon anneals.
        update_target_interval: learn calls between target copies (PARL, EPyMARL: 200).
        seed: seed of the generator that draws actions.
        target_tau: the fraction of the way each target update moves the target, in (0, 1]:
            1 copies (PARL's); with ``update_target_interval=1``, e.g. 0.01 is a soft update.
        standardise_rewards: standardise rewards with running statistics.
        device: torch only: move the algorithm there (``"cpu"``, ``"cuda"``, ...); None keeps
            it where it is.
    """

    alg: COMA

    def __init__(
        self,
        algorithm: COMA,
        exploration_start: float = 0.0,
        exploration_end: float = 0.0,
        exploration_steps: int = 1,
        update_target_interval: int = 200,
        seed: int | None = None,
        standardise_rewards: bool = False,
        device: Any = None,
        target_tau: float = 1.0,
    ) -> None:
        if not isinstance(algorithm, COMA):
            raise TypeError(f"COMAAgent needs a COMA algorithm, got {type(algorithm).__name__}")
        for name, value in (
            ("exploration_start", exploration_start),
            ("exploration_end", exploration_end),
        ):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        steps = positive_int("exploration_steps", exploration_steps)
        super().__init__(
            algorithm,
            (exploration_start, exploration_end, steps),
            update_target_interval,
            seed,
            standardise_rewards,
            device,
            target_tau,
        )
        self.n_actions = algorithm.n_actions

    def policy(self, obs: ArrayLike, available_actions: ArrayLike | None = None) -> np.ndarray:
        """The policy's probabilities ``[..., n_agents, n_actions]`` for the team's
        observations ``[n_agents, obs_dim]`` (or ``[B, n_agents, obs_dim]``), 0 for
        unavailable actions; advances the hidden state."""
        array = np.asarray(obs, np.float32)
        if array.ndim < 2 or array.shape[-2] != self.n_agents:
            raise ValueError(
                f"observations must be [n_agents, obs_dim] or [B, n_agents, obs_dim] with "
                f"n_agents={self.n_agents}, got shape {array.shape}"
            )
        flat = array.reshape(-1, array.shape[-1])
        if self._hidden is None or self._hidden.shape[0] != flat.shape[0]:
            self._hidden = self.alg.init_hidden(flat.shape[0] // self.n_agents).reshape(
                [flat.shape[0], -1]
            )
        probs, self._hidden = self.alg.predict(self.to_tensor(flat), self._hidden)
        probs = self.to_numpy(probs).reshape(*array.shape[:-1], -1).astype(np.float64)
        if available_actions is None:
            return probs
        allowed = np.asarray(available_actions, np.float64).reshape(probs.shape) > 0
        if not allowed.any(axis=-1).all():
            raise ValueError("available_actions leaves some agent no action; allow at least one")
        probs = np.where(allowed, probs, 0.0)
        total = probs.sum(axis=-1, keepdims=True)
        # Where the policy puts (almost) no mass on any allowed action, choose uniformly.
        return np.where(
            total > 1e-12,
            probs / np.maximum(total, 1e-12),
            allowed / allowed.sum(-1, keepdims=True),
        )

    def predict(self, obs: ArrayLike, available_actions: ArrayLike | None = None) -> np.ndarray:
        """The most probable actions ``[..., n_agents]`` among the available ones."""
        return self.policy(obs, available_actions).argmax(axis=-1)

    def sample(self, obs: ArrayLike, available_actions: ArrayLike | None = None) -> np.ndarray:
        """Actions drawn from the policy mixed with epsilon of a uniform choice among the
        available actions, shaped as :meth:`predict`'s."""
        epsilon = self.epsilon
        self.sample_steps += 1
        probs = self.policy(obs, available_actions)
        allowed = (
            np.ones_like(probs)
            if available_actions is None
            else (np.asarray(available_actions, np.float64).reshape(probs.shape) > 0)
        )
        probs = (1.0 - epsilon) * probs + epsilon * allowed / allowed.sum(-1, keepdims=True)
        cumulative = np.cumsum(probs, axis=-1)
        draws = self.rng.random(probs.shape[:-1])[..., None] * cumulative[..., -1:]
        return np.minimum((cumulative <= draws).sum(axis=-1), self.n_actions - 1)

    def learn(
        self,
        state: ArrayLike,
        actions: ArrayLike,
        reward: ArrayLike,
        terminated: ArrayLike,
        obs: ArrayLike,
        available_actions: ArrayLike,
        filled: ArrayLike,
    ) -> COMAStats:
        """One COMA update on an :class:`~parl_algos_marl.episode_buffer.EpisodeBatch`'s seven
        arrays (``agent.learn(*batch)``), collected with :meth:`sample`."""
        arrays = [state, actions, reward, terminated, obs, available_actions, filled]
        moments = self.reward_moments
        if self.standardise_rewards:
            arrays, moments = standardised_rewards(arrays, moments)
        stats = self.alg.learn(*arrays, epsilon=self.epsilon)
        self.reward_moments = moments  # only once COMA accepted the batch
        self._count_learn_step()
        return COMAStats(*(float(value) for value in stats))


class MAPPOAgent(Agent):
    """Acts for a team with :class:`~parl_algos_marl.mappo.MAPPO` and learns from its rollouts.

    It builds MAPPO's input rows ``[obs_i, one_hot(i), state]`` from the team's observations
    ``[n_agents, obs_dim]`` (or a batch of teams ``[B, n_agents, obs_dim]``) and the global
    state, so one batched call acts for every agent. It runs on its algorithm's framework
    (paddle or torch).

    Args:
        algorithm: a :class:`~parl_algos_marl.mappo.MAPPO`.
        n_agents: the number of agents.
        seed: seed of the generator that shuffles minibatches.
        device: torch only: move the algorithm there (``"cpu"``, ``"cuda"``, ...); None keeps
            it where it is.
    """

    alg: MAPPO
    checkpoint_state = ("rng",)

    def __init__(
        self, algorithm: MAPPO, n_agents: int, seed: int | None = None, device: Any = None
    ) -> None:
        if not isinstance(algorithm, MAPPO):
            raise TypeError(f"MAPPOAgent needs a MAPPO algorithm, got {type(algorithm).__name__}")
        super().__init__(algorithm, device=device)
        self.n_agents = n_agents
        self.rng = np.random.default_rng(seed)

    def rows(self, obs: ArrayLike, state: ArrayLike | None = None) -> np.ndarray:
        """MAPPO's input rows ``[..., n_agents, obs_dim + n_agents (+ state_dim)]``."""
        obs = np.asarray(obs, np.float32)
        if obs.ndim < 2 or obs.shape[-2] != self.n_agents:
            raise ValueError(
                f"observations must be [n_agents, obs_dim] or [B, n_agents, obs_dim] with "
                f"n_agents={self.n_agents}, got shape {obs.shape}"
            )
        ids = np.eye(self.n_agents, dtype=np.float32)
        parts = [obs, np.broadcast_to(ids, (*obs.shape[:-1], self.n_agents))]
        if state is not None:
            state = np.asarray(state, np.float32)
            parts.append(np.broadcast_to(state[..., None, :], (*obs.shape[:-1], state.shape[-1])))
        return np.concatenate(parts, axis=-1)

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """Greedy actions ``[..., n_agents]`` for the team's observations."""
        return self.to_numpy(self.alg.predict(self.to_tensor(self.rows(obs))))

    def sample(self, obs: ArrayLike, state: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(values, actions, log_probs)``, each ``[..., n_agents]``, drawn at ``obs``."""
        step = self.alg.act(self.to_tensor(self.rows(obs, state)))
        return self.to_numpy(step.value), self.to_numpy(step.action), self.to_numpy(step.log_prob)

    def value(self, obs: ArrayLike, state: ArrayLike) -> np.ndarray:
        """The centralised values ``[..., n_agents]``."""
        return self.to_numpy(self.alg.value(self.to_tensor(self.rows(obs, state))))

    def learn(
        self,
        rows: ArrayLike,
        actions: ArrayLike,
        values: ArrayLike,
        returns: ArrayLike,
        log_probs: ArrayLike,
        advantages: ArrayLike,
        epochs: int,
        num_minibatches: int,
        lr: float | None = None,
    ) -> PPOStats:
        """PPO epochs on a rollout flattened to agent-steps (``rows`` from :meth:`rows`)."""
        return self.alg.learn_epochs(
            rows,
            actions,
            values,
            returns,
            log_probs,
            advantages,
            epochs,
            num_minibatches,
            lr=lr,
            rng=self.rng,
        )


class AgentTeam:
    """Agents that each act for one member of a team, seen as one agent.

    ``predict`` takes a tuple of the members' observations (what a vector env of
    :class:`parl.env.multiagent_env.TeamEnv` gives) and returns the tuple of their greedy
    actions; ``save`` writes every member's model into one safetensors file (keys
    ``agent<i>/<name>``) and ``restore`` reads it back, checking all members before changing
    any. This is what ``parl.utils.EvalTracker`` drives for MADDPG.

    Args:
        agents: one ``parl.Agent`` per team member, in agent order.
    """

    def __init__(self, agents: Sequence[AgentBase]) -> None:
        if not agents:
            raise ValueError("AgentTeam needs at least one agent")
        self.agents = list(agents)

    def predict(self, obs_n: Sequence[ArrayLike]) -> tuple[np.ndarray, ...]:
        """Every member's greedy action(s) for its observation(s)."""
        if len(obs_n) != len(self.agents):
            raise ValueError(
                f"predict needs one observation (batch) per agent ({len(self.agents)}), got "
                f"{len(obs_n)}"
            )
        return tuple(agent.predict(obs) for agent, obs in zip(self.agents, obs_n, strict=True))

    def get_weights(self) -> dict[str, np.ndarray]:
        """Every member's weights, as ``{"agent<i>/<name>": array}``."""
        return {
            f"agent{index}/{name}": value
            for index, agent in enumerate(self.agents)
            for name, value in agent.get_weights().items()
        }

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        """Load :meth:`get_weights`' result; names and shapes of all members are checked
        before any member changes."""
        current = self.get_weights()
        missing, unexpected = (
            sorted(set(current) - set(weights)),
            sorted(set(weights) - set(current)),
        )
        wrong = [k for k in current if k in weights and np.shape(weights[k]) != current[k].shape]
        if missing or unexpected or wrong:
            raise CheckpointError(
                f"team weights do not fit these {len(self.agents)} agents: missing "
                f"{missing[:4]}, unexpected {unexpected[:4]}, wrong shapes {wrong[:4]}"
            )
        for index, agent in enumerate(self.agents):
            prefix = f"agent{index}/"
            agent.set_weights(
                {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
            )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every member's model weights into one file, atomically."""
        metadata = {
            "format": TEAM_WEIGHTS_FORMAT,
            "version": 1,
            "agents": len(self.agents),
            "backend": self.agents[0].backend.name,
        }
        write_tensor_file(path, self.get_weights(), metadata)

    def restore(self, path: str | os.PathLike[str], *, file_backend: str | None = None) -> None:
        """Load a file written by :meth:`save`; on any error nothing changes.

        A file of the other backend is refused, and so is one that does not name its backend
        unless ``file_backend`` does (see :meth:`parl.Agent.restore`).
        """
        loaded = read_tensor_file(path)
        if loaded.metadata.get("format") != TEAM_WEIGHTS_FORMAT:
            raise CheckpointError(
                f"{str(path)!r} is not a team weights file (written by AgentTeam.save); restore "
                "a single agent's file with that agent's restore()"
            )
        check_backend(loaded, self.agents[0].backend.name, repr(str(path)), file_backend)
        self.set_weights(loaded.tensors)
