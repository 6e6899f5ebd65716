"""Ready-made models for the multi-agent algorithms, following their model contracts.

* :class:`MAModel` for MADDPG: a decentralised actor and a centralised critic on every agent's
  observation and action (PARL 2.x's ``MAModel``);
* :class:`RNNAgentModel` and :class:`QMixerModel` for QMIX: a GRU agent network shared by the
  agents, and the monotonic mixer whose weights come from hypernetworks on the global state;
* :class:`MAPPOModel` for MAPPO: a policy on an agent's observation and a value on the global
  state.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import parl
from parl.core.validation import positive_int

import paddle

__all__ = ["MAModel", "mlp"]

# Bounds of a continuous actor's log standard deviation.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


def mlp(in_dim: int, out_dim: int, hidden_sizes: Sequence[int]) -> paddle.nn.Sequential:
    """A ReLU MLP ``in_dim → hidden_sizes → out_dim`` with a linear output."""
    sizes = [positive_int("in_dim", in_dim), *hidden_sizes, positive_int("out_dim", out_dim)]
    layers: list[paddle.nn.Layer] = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        layers += [paddle.nn.Linear(fan_in, fan_out), paddle.nn.ReLU()]
    return paddle.nn.Sequential(*layers[:-1])


class MAModel(parl.Model):
    """One MADDPG agent's actor and centralised critic (two 64-unit ReLU layers each, as PARL).

    ``policy(obs)`` gives logits ``[B, act_dim]`` for a discrete action space, or
    ``(mean, log_std)`` for a continuous one; ``value(obs_n, act_n)`` gives ``Q [B]`` from the
    lists of every agent's observations and actions.

    Args:
        obs_dim: this agent's observation size.
        act_dim: this agent's action size (the number of discrete actions).
        critic_in_dim: the sum of every agent's observation and action sizes.
        continuous_actions: whether the policy is a Gaussian instead of logits.
        hidden_sizes: the widths of both networks' hidden layers.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        critic_in_dim: int,
        continuous_actions: bool = False,
        hidden_sizes: Sequence[int] = (64, 64),
    ) -> None:
        super().__init__()
        self.continuous_actions = continuous_actions
        self.act_dim = positive_int("act_dim", act_dim)
        outputs = 2 * act_dim if continuous_actions else act_dim
        self.actor_model = mlp(obs_dim, outputs, hidden_sizes)
        self.critic_model = mlp(critic_in_dim, 1, hidden_sizes)

    def policy(self, obs: paddle.Tensor) -> paddle.Tensor | tuple[paddle.Tensor, paddle.Tensor]:
        out = self.actor_model(obs)
        if not self.continuous_actions:
            return out
        mean, log_std = paddle.split(out, 2, axis=-1)
        return mean, log_std.clip(LOG_STD_MIN, LOG_STD_MAX)

    def value(
        self, obs_n: Sequence[paddle.Tensor], act_n: Sequence[paddle.Tensor]
    ) -> paddle.Tensor:
        return self.critic_model(paddle.concat([*obs_n, *act_n], axis=-1)).squeeze(-1)

    def get_actor_params(self) -> list[paddle.Tensor]:
        return self.actor_model.parameters()

    def get_critic_params(self) -> list[paddle.Tensor]:
        return self.critic_model.parameters()
