"""The QuickStart agent: numpy observations in, actions out, for a ``PolicyGradient``."""

from __future__ import annotations

import parl

import numpy as np
import paddle


class CartpoleAgent(parl.Agent):
    """Numpy-facing agent of the QuickStart (PARL's ``CartpoleAgent``).

    Acting draws from the policy's probabilities with numpy, so one environment step costs one
    small forward pass and no extra paddle operations.

    Args:
        algorithm: a ``PolicyGradient`` instance.
        seed: seed of the generator used by :meth:`sample`.
    """

    def __init__(self, algorithm: parl.Algorithm, seed: int | None = None) -> None:
        super().__init__(algorithm)
        self.rng = np.random.default_rng(seed)

    def _probs(self, obs: np.ndarray) -> np.ndarray:
        batch = paddle.to_tensor(np.asarray(obs, dtype=np.float32)[None])
        return self.alg.predict(batch).numpy()[0].astype(np.float64)

    def sample(self, obs: np.ndarray) -> int:
        """Return an action drawn from the policy for one observation ``[obs_dim]``."""
        probs = self._probs(obs)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))

    def predict(self, obs: np.ndarray) -> int:
        """Return the most probable action for one observation ``[obs_dim]``."""
        return int(np.argmax(self._probs(obs)))

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
