"""The PPO agent: batched numpy observations of a vector env in, numpy actions out."""

from __future__ import annotations

from parl.core.paddle import Agent, Algorithm

import numpy as np
import paddle

from parl_algos_pg.ppo import PPO
from parl_algos_pg.ppo_acting import PPOActing

__all__ = ["PPOAgent"]


class PPOAgent(PPOActing, Agent):
    """Numpy-facing agent for a :class:`PPO` algorithm acting on ``N`` environments at once.

    The acting and learning are :class:`~parl_algos_pg.ppo_acting.PPOActing`'s (shared with
    the torch agent); this class converts with paddle.

    Args:
        algorithm: a ``PPO`` instance.
        seed: seed of the generator that shuffles minibatches.

    Examples:
        >>> from parl_algos_pg import DiscretePPOModel
        >>> agent = PPOAgent(PPO(DiscretePPOModel(obs_dim=4, act_dim=2)), seed=0)
        >>> value, action, logp = agent.sample(np.zeros((3, 4), np.float32))
        >>> value.shape, action.shape, logp.shape
        ((3,), (3,), (3,))
    """

    alg: PPO

    def __init__(self, algorithm: Algorithm, seed: int | None = None) -> None:
        if not isinstance(algorithm, PPO):
            raise TypeError(f"PPOAgent needs a PPO algorithm, got {type(algorithm).__name__}")
        super().__init__(algorithm)
        self._setup_acting(seed)

    def _tensor(self, obs: np.ndarray) -> paddle.Tensor:
        return paddle.to_tensor(obs, dtype="float32")

    def _array(self, tensor: paddle.Tensor) -> np.ndarray:
        array: np.ndarray = tensor.numpy()
        return array
