"""PPOAgent: batched numpy observations of a vector env in, numpy actions out."""

from __future__ import annotations

from typing import Any, ClassVar

from parl.core.neutral import Agent

import numpy as np
from numpy.typing import ArrayLike

from parl_algos_pg.ppo import PPO, PPOStats

__all__ = ["PPOAgent"]


class PPOAgent(Agent):
    """Numpy-facing agent for a :class:`~parl_algos_pg.ppo.PPO` acting on ``N`` environments.

    Each method makes one batched call into the algorithm and one transfer back, so the
    framework's dispatch cost is paid once per vector step, not once per environment. A
    checkpoint keeps the generator ``rng`` that shuffles minibatches, so a resumed run draws the
    minibatches the saved one would have. It runs on the algorithm's framework; on torch,
    ``device`` moves it.

    Args:
        algorithm: a ``PPO`` instance.
        seed: seed of the generator that shuffles minibatches.
        device: torch only: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``; None keeps the
            algorithm's.

    Examples:
        >>> from parl_algos_pg import PPO, DiscretePPOModel
        >>> agent = PPOAgent(PPO(DiscretePPOModel(obs_dim=4, act_dim=2)), seed=0)
        >>> value, action, logp = agent.sample(np.zeros((3, 4), np.float32))
        >>> value.shape, action.shape, logp.shape
        ((3,), (3,), (3,))
    """

    alg: PPO
    checkpoint_state: ClassVar[tuple[str, ...]] = ("rng",)

    def __init__(self, algorithm: PPO, seed: int | None = None, *, device: Any = None) -> None:
        if not isinstance(algorithm, PPO):
            raise TypeError(f"PPOAgent needs a PPO algorithm, got {type(algorithm).__name__}")
        super().__init__(algorithm, device=device)
        self.rng = np.random.default_rng(seed)

    def sample(self, obs: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(value [N], action, log_prob [N])`` drawn from the policy at ``obs``."""
        step = self.alg.act(self.to_tensor(obs))
        return self.to_numpy(step.value), self.to_numpy(step.action), self.to_numpy(step.log_prob)

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """Return greedy actions for ``obs [N, ...]``."""
        actions: np.ndarray = self.to_numpy(self.alg.predict(self.to_tensor(obs)))
        return actions

    def value(self, obs: ArrayLike) -> np.ndarray:
        """Return state values ``[N]``."""
        values: np.ndarray = self.to_numpy(self.alg.value(self.to_tensor(obs)))
        return values

    def learn(
        self,
        obs: ArrayLike,
        action: ArrayLike,
        value: ArrayLike,
        returns: ArrayLike,
        logprob: ArrayLike,
        adv: ArrayLike,
        epochs: int,
        num_minibatches: int,
        lr: float | None,
    ) -> PPOStats:
        """Run ``epochs`` × ``num_minibatches`` PPO steps on a flattened rollout.

        Returns:
            The means of the losses, ``approx_kl`` and ``clip_fraction``, the rollout's
            explained variance and the epochs run (see ``PPO.learn_epochs``).
        """
        return self.alg.learn_epochs(
            obs, action, value, returns, logprob, adv, epochs, num_minibatches, lr=lr, rng=self.rng
        )
