"""An epsilon-greedy contextual bandit: regress each action's reward, act greedily on it."""

from __future__ import annotations

import parl
from parl.core.config import AlgorithmConfig

import paddle
import pydantic


class BanditConfig(AlgorithmConfig):
    """Hyperparameters of :class:`ContextualBandit`."""

    lr: float = pydantic.Field(0.05, gt=0.0)
    """Learning rate of the reward regression (Adam)."""
    epsilon: float = pydantic.Field(0.1, ge=0.0, le=1.0)
    """Probability of a uniformly random action in ``sample``."""


class ContextualBandit(parl.Algorithm):
    """Epsilon-greedy contextual bandit (Sutton & Barto, *Reinforcement Learning*, 2018, §2.9).

    The model maps a context to one predicted reward per action; ``learn`` regresses the
    prediction of the taken action onto the observed reward.

    Args:
        model: a ``parl.Model`` whose ``forward(obs)`` returns ``[batch, n_actions]`` rewards.
        lr: learning rate; see :class:`BanditConfig` for every option.
    """

    Config = BanditConfig
    required_model_methods = ("forward",)

    def __init__(self, model: parl.Model, lr: float | None = None, **options: object) -> None:
        super().__init__(model, lr=lr, **options)
        self.optimizer = paddle.optimizer.Adam(
            learning_rate=self.config.lr, parameters=model.parameters()
        )

    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Return the greedy action for each context (one context: one action)."""
        with paddle.no_grad():
            return self.model(obs).argmax(axis=-1)

    def sample(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Return the greedy action, or with probability ``epsilon`` a uniform one."""
        with paddle.no_grad():
            rewards = self.model(obs)
        greedy = rewards.argmax(axis=-1)
        explore = paddle.rand(greedy.shape) < self.config.epsilon
        random = paddle.randint(0, rewards.shape[-1], greedy.shape, dtype=greedy.dtype)
        return paddle.where(explore, random, greedy)

    def learn(self, obs: paddle.Tensor, action: paddle.Tensor, reward: paddle.Tensor) -> float:
        """Take one regression step on a batch; return the mean squared error."""
        predicted = paddle.take_along_axis(self.model(obs), action.reshape([-1, 1]), axis=1)
        loss = paddle.nn.functional.mse_loss(predicted.reshape([-1]), reward.reshape([-1]))
        self.optimizer.clear_grad()
        loss.backward()
        self.optimizer.step()
        return float(loss)
