"""The QuickStart agent: numpy observations in, actions out, for a ``PolicyGradient``."""

from __future__ import annotations

import parl

import numpy as np
import paddle


class CartpoleAgent(parl.Agent):
    """Numpy-facing agent of the QuickStart (PARL's ``CartpoleAgent``), for a batch of envs.

    Acting draws from the policy's probabilities with numpy, so one step of ``N`` environments
    costs one small forward pass and no extra paddle operations.

    Args:
        algorithm: a ``PolicyGradient`` instance.
        seed: seed of the generator used by :meth:`sample`.
    """

    def __init__(self, algorithm: parl.Algorithm, seed: int | None = None) -> None:
        super().__init__(algorithm)
        self.rng = np.random.default_rng(seed)

    def _probs(self, obs: np.ndarray) -> np.ndarray:
        return self.alg.predict(paddle.to_tensor(np.asarray(obs, dtype=np.float32))).numpy()

    def sample(self, obs: np.ndarray) -> np.ndarray:
        """Return actions ``[N]`` drawn from the policy for observations ``[N, obs_dim]``."""
        cumulative = self._probs(obs).cumsum(axis=1)
        draws = self.rng.random((len(cumulative), 1)) * cumulative[:, -1:]
        return (cumulative < draws).sum(axis=1)

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """Return the most probable actions ``[N]`` for observations ``[N, obs_dim]``."""
        return self._probs(obs).argmax(axis=1)

    def learn(self, obs: np.ndarray, act: np.ndarray, reward: np.ndarray) -> float:
        """Take one REINFORCE step on a batch of steps and return the loss.

        Args:
            obs: observations ``[B, obs_dim]``.
            act: actions taken ``[B]``.
            reward: the (normalised) return credited to each step ``[B]``.
        """
        loss = self.alg.learn(
            paddle.to_tensor(np.asarray(obs, dtype=np.float32)),
            paddle.to_tensor(np.asarray(act, dtype=np.int64)),
            paddle.to_tensor(np.asarray(reward, dtype=np.float32)),
        )
        return float(loss)
