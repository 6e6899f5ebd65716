"""SAC's actor-critic model on torch: the layers of :mod:`parl_algos_ac.models`, same names.

A torch :class:`GaussianActorCritic` and a paddle one built with the same sizes have the same
weight names (``actor.0.weight``, ``critic.weights.0``, ...); the critics' stacked weights
``[num_critics, fan_in, fan_out]`` have the same layout on both, and the actor's ``Linear``
weights are transposed by ``parl.core.torch.interop``. Initialisation as the paddle models:
``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from parl.core.torch import Model
from parl.core.validation import positive_int

import torch
from torch import nn

__all__ = ["EnsembleMLP", "GaussianActorCritic", "mlp"]

# SAC's usual bounds on the log standard deviation (as the paddle model's).
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


def _uniform_(tensor: torch.Tensor, fan_in: int) -> None:
    bound = 1.0 / math.sqrt(fan_in)
    nn.init.uniform_(tensor, -bound, bound)


def mlp(in_dim: int, out_dim: int, hidden_sizes: Sequence[int]) -> nn.Sequential:
    """A ReLU MLP ``in_dim → hidden_sizes → out_dim`` with a linear output."""
    layers: list[nn.Module] = []
    sizes = [positive_int("in_dim", in_dim), *hidden_sizes, positive_int("out_dim", out_dim)]
    last = len(sizes) - 2
    for index, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        layer = nn.Linear(fan_in, fan_out)
        _uniform_(layer.weight, fan_in)
        if index < last:
            _uniform_(layer.bias, fan_in)
            layers += [layer, nn.ReLU()]
        else:  # the output layer's bias starts at zero, as paddle's default
            nn.init.zeros_(layer.bias)
            layers.append(layer)
    return nn.Sequential(*layers)


class EnsembleMLP(nn.Module):
    """``num_members`` ReLU MLPs with one output each, evaluated together (as paddle's).

    ``forward(x)`` takes ``[B, in_dim]`` and returns ``[num_members, B]``: each layer is one
    batched matmul over the stacked weights ``[num_members, fan_in, fan_out]``.
    """

    def __init__(self, in_dim: int, hidden_sizes: Sequence[int], num_members: int) -> None:
        super().__init__()
        self.num_members = positive_int("num_members", num_members)
        sizes = [positive_int("in_dim", in_dim), *hidden_sizes, 1]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in itertools.pairwise(sizes):
            weight = torch.empty(self.num_members, fan_in, fan_out)
            bias = torch.empty(self.num_members, 1, fan_out)
            _uniform_(weight, fan_in)
            _uniform_(bias, fan_in)
            self.weights.append(nn.Parameter(weight))
            self.biases.append(nn.Parameter(bias))

    def forward(self, x: torch.Tensor, members: int | None = None) -> torch.Tensor:
        """``[B, in_dim]`` → ``[num_members, B]``; ``members=k`` evaluates the first ``k`` only."""
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            if members is not None:
                weight, bias = weight[:members], bias[:members]
            x = torch.baddbmm(bias, x.expand(weight.shape[0], *x.shape[-2:]), weight)
            if index < last:
                x = torch.relu(x)
        return x.squeeze(-1)


class GaussianActorCritic(Model):
    """SAC's model: ``policy(obs)`` → ``(mean, log_std)`` of the pre-``tanh`` Gaussian, with
    ``log_std`` clipped to ``[-20, 2]``; ``value(obs, act)`` → ``[num_critics, B]``.

    Args:
        obs_dim: observation size.
        act_dim: action size.
        hidden_sizes: widths of the hidden layers of the actor and of each critic.
        num_critics: Q-networks (SAC takes the minimum of two).
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (256, 256),
        num_critics: int = 2,
    ) -> None:
        super().__init__()
        self.obs_dim = positive_int("obs_dim", obs_dim)
        self.act_dim = positive_int("act_dim", act_dim)
        self.actor = mlp(obs_dim, 2 * act_dim, hidden_sizes)
        self.critic = EnsembleMLP(obs_dim + act_dim, hidden_sizes, num_critics)

    def policy(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log standard deviation, each ``[B, act_dim]``."""
        mean, log_std = self.actor(obs).chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def value(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Q values of every critic, ``[num_critics, B]``."""
        q: torch.Tensor = self.critic(torch.cat([obs, act], dim=-1))
        return q

    def get_actor_params(self) -> list[nn.Parameter]:
        """The parameters the actor's optimizer updates."""
        return list(self.actor.parameters())

    def get_critic_params(self) -> list[nn.Parameter]:
        """The parameters the critic's optimizer updates."""
        return list(self.critic.parameters())

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The greedy action ``tanh(mean)``."""
        return torch.tanh(self.policy(obs)[0])
