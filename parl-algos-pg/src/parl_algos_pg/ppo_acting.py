"""What a PPO agent does on either backend: batched numpy in, one call, numpy out."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from parl_algos_pg.ppo_config import PPOStats

__all__ = ["PPOActing"]


class PPOActing:
    """The numpy side of ``PPOAgent`` (paddle's and torch's); they add :meth:`_tensor` and
    :meth:`_array`, the one place where observations become tensors and results come back.

    Each method makes one batched call into the algorithm and one transfer back, so the
    framework's dispatch cost is paid once per vector step, not once per environment. A
    checkpoint keeps the generator ``rng`` that shuffles minibatches, so a resumed run draws the
    minibatches the saved one would have.
    """

    alg: Any
    checkpoint_state: ClassVar[tuple[str, ...]] = ("rng",)

    def _setup_acting(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def _tensor(self, obs: np.ndarray) -> Any:
        """Observations as a float32 tensor where the algorithm computes."""
        raise NotImplementedError

    def _array(self, tensor: Any) -> np.ndarray:
        """A tensor's values as a numpy array."""
        raise NotImplementedError

    def sample(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(value [N], action, log_prob [N])`` drawn from the policy at ``obs [N, ...]``.

        ``PPO.sample`` returns PARL's leading axis of one draw on actions and log-probs (taken
        off here) and the entropy, which the rollout does not need.
        """
        value, action, logp, _ = self.alg.sample(self._tensor(obs))
        return self._array(value), self._array(action)[0], self._array(logp)[0]

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """Return greedy actions for ``obs [N, ...]``."""
        return self._array(self.alg.predict(self._tensor(obs)))

    def value(self, obs: np.ndarray) -> np.ndarray:
        """Return state values ``[N]``."""
        return self._array(self.alg.value(self._tensor(obs)))

    def learn(
        self,
        obs: np.ndarray,
        action: np.ndarray,
        value: np.ndarray,
        returns: np.ndarray,
        logprob: np.ndarray,
        adv: np.ndarray,
        epochs: int,
        num_minibatches: int,
        lr: float | None,
    ) -> PPOStats:
        """Run ``epochs`` × ``num_minibatches`` PPO steps on a flattened rollout.

        Returns:
            The means of the losses, ``approx_kl`` and ``clip_fraction``, the rollout's
            explained variance and the epochs run (see ``PPO.learn_epochs``).
        """
        stats: PPOStats = self.alg.learn_epochs(
            obs, action, value, returns, logprob, adv, epochs, num_minibatches, lr=lr, rng=self.rng
        )
        return stats
