"""DQNAgent: the numpy-facing agent for DQN and DDQN, with batched epsilon-greedy acting."""

from __future__ import annotations

from typing import Any, ClassVar

from parl.core.neutral import Agent
from parl.core.validation import positive_int

import numpy as np
from numpy.typing import ArrayLike

from parl_algos_dqn.dqn import DQN

__all__ = ["DQNAgent"]


class DQNAgent(Agent):
    """Acts epsilon-greedily and trains a :class:`DQN`/``DDQN``, on one observation or a batch.

    ``predict`` and ``sample`` take one observation (as PARL 2.x's agents do) or a batch (one
    row per environment of a vector env, so one forward pass serves them all) and return one
    action or a ``[B]`` array. The target network is synced every ``target_update_interval``
    calls to :meth:`learn`. A checkpoint (:meth:`save_checkpoint`) keeps the learn-step count
    and the exploration generator, so a resumed run syncs and explores as the saved one would.
    It runs on the algorithm's framework; on torch, ``device`` moves it.

    Args:
        algorithm: a :class:`~parl_algos_dqn.dqn.DQN` or :class:`~parl_algos_dqn.ddqn.DDQN`.
        act_dim: number of discrete actions (for random exploration).
        target_update_interval: learn steps between hard target syncs; None leaves syncing
            to the caller (``agent.alg.sync_target()``).
        seed: seed of the exploration generator.
        device: torch only: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``; None keeps the
            algorithm's.

    Examples:
        >>> from parl_algos_dqn import DQN, DQNAgent, QNetwork
        >>> agent = DQNAgent(DQN(QNetwork(4, 2)), act_dim=2, target_update_interval=100)
        >>> agent.sample(np.zeros((3, 4), dtype=np.float32), epsilon=0.1).shape
        (3,)
        >>> int(agent.predict(np.zeros(4, dtype=np.float32))) in (0, 1)
        True
    """

    alg: DQN
    checkpoint_state: ClassVar[tuple[str, ...]] = ("learn_steps", "rng")

    def __init__(
        self,
        algorithm: DQN,
        act_dim: int,
        *,
        target_update_interval: int | None = None,
        seed: int | None = None,
        device: Any = None,
    ) -> None:
        if not isinstance(algorithm, DQN):
            raise TypeError(
                f"DQNAgent needs a DQN or DDQN algorithm, got {type(algorithm).__name__}"
            )
        super().__init__(algorithm, device=device)
        self.act_dim = positive_int("act_dim", act_dim)
        self.target_update_interval = (
            None
            if target_update_interval is None
            else positive_int("target_update_interval", target_update_interval)
        )
        self.learn_steps = 0
        self.rng = np.random.default_rng(seed)

    def q_values(self, obs: ArrayLike) -> np.ndarray:
        """The Q values of one observation ``[act_dim]`` or a batch ``[B, act_dim]``."""
        q_values: np.ndarray = self.to_numpy(self.alg.predict(self.to_tensor(obs)))
        return q_values

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """Return the greedy action(s): int64 ``[B]`` for a batch, a 0-d array for one obs."""
        return self.q_values(obs).argmax(axis=-1)

    def sample(self, obs: ArrayLike, epsilon: float) -> np.ndarray:
        """Return epsilon-greedy action(s), shaped as :meth:`predict`'s.

        Each observation takes a uniformly random action with probability ``epsilon``, else
        the greedy one.
        """
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        greedy = self.predict(obs)
        explore = self.rng.random(greedy.shape) < epsilon
        return np.where(explore, self.rng.integers(0, self.act_dim, size=greedy.shape), greedy)

    def learn(
        self,
        obs: ArrayLike,
        action: ArrayLike,
        reward: ArrayLike,
        next_obs: ArrayLike,
        terminal: ArrayLike,
    ) -> Any:
        """Take one gradient step on a numpy batch and return the loss tensor.

        ``terminal`` is 1 only for *terminated* transitions (not for time-limit truncations).
        Call ``float(loss)`` only when logging, to avoid a sync per step.
        """
        loss = self.alg.learn(obs, action, reward, next_obs, terminal)
        self.learn_steps += 1
        if self.target_update_interval and self.learn_steps % self.target_update_interval == 0:
            self.alg.sync_target()
        return loss
