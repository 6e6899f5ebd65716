"""The QuickStart agent: numpy observations in, actions out, for a ``PolicyGradient``."""

from __future__ import annotations

from typing import Any

from parl.core.neutral import Agent

import numpy as np


class CartpoleAgent(Agent):
    """Numpy-facing agent of the QuickStart (PARL's ``CartpoleAgent``), on paddle or torch.

    It acts on one observation ``[obs_dim]`` (an ``int`` action, as PARL's agent) or on a batch
    ``[N, obs_dim]`` of a vector env (actions ``[N]``). Acting draws from the policy's
    probabilities with numpy, so one step of ``N`` environments costs one small forward pass
    and no extra framework operations.

    Args:
        algorithm: a ``PolicyGradient`` instance.
        seed: seed of the generator used by :meth:`sample`.
        device: torch only: ``"cpu"`` or ``"cuda"``; None keeps the algorithm's.
    """

    def __init__(self, algorithm: Any, seed: int | None = None, device: Any = None) -> None:
        super().__init__(algorithm, device=device)
        self.rng = np.random.default_rng(seed)

    def _probs(self, obs: np.ndarray) -> np.ndarray:
        probs: np.ndarray = self.to_numpy(self.alg.predict(self.to_tensor(obs)))
        return probs

    def sample(self, obs: np.ndarray) -> np.ndarray | int:
        """Return actions drawn from the policy: ``[N]`` for a batch, an ``int`` for one obs."""
        probs = self._probs(obs)
        cumulative = np.atleast_2d(probs).cumsum(axis=1)
        draws = self.rng.random((len(cumulative), 1)) * cumulative[:, -1:]
        return _like_input((cumulative < draws).sum(axis=1), probs)

    def predict(self, obs: np.ndarray) -> np.ndarray | int:
        """Return the most probable actions: ``[N]`` for a batch, an ``int`` for one obs."""
        probs = self._probs(obs)
        return _like_input(np.atleast_2d(probs).argmax(axis=1), probs)

    def learn(self, obs: np.ndarray, act: np.ndarray, reward: np.ndarray) -> float:
        """Take one REINFORCE step on a batch of steps and return the loss.

        Args:
            obs: observations ``[B, obs_dim]``.
            act: actions taken ``[B]``.
            reward: the (normalised) return credited to each step ``[B]``.
        """
        loss = self.alg.learn(
            self.to_tensor(obs), self.to_tensor(act, "int64"), self.to_tensor(reward)
        )
        return float(loss)


def _like_input(actions: np.ndarray, probs: np.ndarray) -> np.ndarray | int:
    """The actions of a batch as they are; the one action of an unbatched observation as int."""
    return actions if probs.ndim == 2 else int(actions[0])
