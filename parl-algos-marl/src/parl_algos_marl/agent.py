"""Numpy-facing agents of the multi-agent algorithms."""

from __future__ import annotations

from collections.abc import Sequence

import parl
from parl.utils import ReplayMemory

import numpy as np
from numpy.typing import ArrayLike

from parl_algos_marl.maddpg import MADDPG

__all__ = ["MADDPGAgent"]


class MADDPGAgent(parl.Agent):
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
    ) -> None:
        if not isinstance(algorithm, MADDPG):
            raise TypeError(f"MADDPGAgent needs a MADDPG algorithm, got {type(algorithm).__name__}")
        if len(obs_dim_n) != algorithm.n or len(act_dim_n) != algorithm.n:
            raise ValueError(
                f"obs_dim_n and act_dim_n need one size per agent ({algorithm.n}), got "
                f"{list(obs_dim_n)} and {list(act_dim_n)}"
            )
        super().__init__(algorithm)
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
        return self.alg.predict(np.asarray(obs, np.float32)).numpy()

    def sample(self, obs: ArrayLike, use_target_model: bool = False) -> np.ndarray:
        """An exploratory action, shaped as :meth:`predict`'s."""
        return self.alg.sample(np.asarray(obs, np.float32), use_target_model).numpy()

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
            agent.alg.sample(next_obs, use_target_model=True).numpy()
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
        next_q = self.alg.Q(next_obs_n, next_act_n, use_target_model=True).numpy()
        done = np.asarray(terminal, np.float32)
        return np.asarray(reward, np.float32) + self.alg.config.gamma * (1.0 - done) * next_q
