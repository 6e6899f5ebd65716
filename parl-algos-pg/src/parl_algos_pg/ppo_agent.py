"""The PPO agent: batched numpy observations of a vector env in, numpy actions out."""

from __future__ import annotations

import parl

import numpy as np
import paddle

from parl_algos_pg.ppo import PPO, PPOStats

__all__ = ["PPOAgent"]


class PPOAgent(parl.Agent):
    """Numpy-facing agent for a :class:`PPO` algorithm acting on ``N`` environments at once.

    Each method makes one batched call into the algorithm and one transfer back, so the cost
    of paddle's dygraph dispatch is paid once per vector step, not once per environment.

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

    def __init__(self, algorithm: parl.Algorithm, seed: int | None = None) -> None:
        if not isinstance(algorithm, PPO):
            raise TypeError(f"PPOAgent needs a PPO algorithm, got {type(algorithm).__name__}")
        super().__init__(algorithm)
        self.rng = np.random.default_rng(seed)

    def sample(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(value [N], action, log_prob [N])`` drawn from the policy at ``obs [N, ...]``.

        ``PPO.sample`` returns PARL's leading axis of one draw on actions and log-probs (taken
        off here) and the entropy, which the rollout does not need.
        """
        value, action, logp, _ = self.alg.sample(paddle.to_tensor(obs, dtype="float32"))
        return value.numpy(), action.numpy()[0], logp.numpy()[0]

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """Return greedy actions for ``obs [N, ...]``."""
        return self.alg.predict(paddle.to_tensor(obs, dtype="float32")).numpy()

    def value(self, obs: np.ndarray) -> np.ndarray:
        """Return state values ``[N]``."""
        return self.alg.value(paddle.to_tensor(obs, dtype="float32")).numpy()

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
        lr: float,
    ) -> PPOStats:
        """Run ``epochs`` × ``num_minibatches`` PPO steps on a flattened rollout.

        Returns:
            The means of the losses, ``approx_kl`` and ``clip_fraction``, the rollout's
            explained variance and the epochs run (see :meth:`PPO.learn_epochs`).
        """
        return self.alg.learn_epochs(
            obs, action, value, returns, logprob, adv, epochs, num_minibatches, lr=lr, rng=self.rng
        )
