"""Ready-made actor-critic models that follow the family's model contracts.

* :class:`DeterministicActorCritic` for DDPG and TD3: ``policy(obs)`` is ``tanh`` of an MLP;
* :class:`GaussianActorCritic` for SAC, OAC and CQL: ``policy(obs)`` gives ``(mean, log_std)``;
* :class:`GaussianActorCriticValue` for IQL: that, plus a state value ``V(s)``;
* :class:`DiscreteActorCritic` for A2C: logits and a state value.

The critics of the continuous models are an :class:`EnsembleMLP`: ``num_critics`` Q-networks
whose weights are stacked, so ``value(obs, act)`` evaluates all of them in one batched
matrix multiply per layer and returns ``[num_critics, B]``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from parl.core.paddle import Model
from parl.core.validation import positive_int

import paddle
import paddle.nn.functional as F

__all__ = [
    "DeterministicActorCritic",
    "DiscreteActorCritic",
    "EnsembleMLP",
    "GaussianActorCritic",
    "GaussianActorCriticValue",
    "mlp",
]

# SAC's usual bounds on the log standard deviation (Haarnoja et al.'s code, SB3, CleanRL).
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


def _uniform(fan_in: int) -> paddle.ParamAttr:
    """``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, the initialisation the published results used."""
    bound = 1.0 / math.sqrt(fan_in)
    return paddle.ParamAttr(initializer=paddle.nn.initializer.Uniform(-bound, bound))


def mlp(in_dim: int, out_dim: int, hidden_sizes: Sequence[int]) -> paddle.nn.Sequential:
    """A ReLU MLP ``in_dim → hidden_sizes → out_dim`` with a linear output."""
    layers: list[paddle.nn.Layer] = []
    sizes = [positive_int("in_dim", in_dim), *hidden_sizes]
    for fan_in, fan_out in itertools.pairwise(sizes):
        layers += [paddle.nn.Linear(fan_in, fan_out, _uniform(fan_in), _uniform(fan_in))]
        layers.append(paddle.nn.ReLU())
    fan_in = sizes[-1]
    layers.append(paddle.nn.Linear(fan_in, positive_int("out_dim", out_dim), _uniform(fan_in)))
    return paddle.nn.Sequential(*layers)


class EnsembleMLP(paddle.nn.Layer):
    """``num_members`` ReLU MLPs with one output each, evaluated together.

    ``forward(x)`` takes ``[B, in_dim]`` and returns ``[num_members, B]``: each layer is one
    batched matmul over the stacked weights ``[num_members, fan_in, fan_out]``.

    Args:
        in_dim: input size.
        hidden_sizes: widths of the hidden layers.
        num_members: how many networks.
    """

    def __init__(self, in_dim: int, hidden_sizes: Sequence[int], num_members: int) -> None:
        super().__init__()
        self.num_members = positive_int("num_members", num_members)
        sizes = [positive_int("in_dim", in_dim), *hidden_sizes, 1]
        self.weights = paddle.nn.ParameterList()
        self.biases = paddle.nn.ParameterList()
        for fan_in, fan_out in itertools.pairwise(sizes):
            self.weights.append(
                self.create_parameter([self.num_members, fan_in, fan_out], attr=_uniform(fan_in))
            )
            self.biases.append(
                self.create_parameter([self.num_members, 1, fan_out], attr=_uniform(fan_in))
            )

    def forward(self, x: paddle.Tensor, members: int | None = None) -> paddle.Tensor:
        """``[B, in_dim]`` → ``[num_members, B]``; ``members=k`` evaluates the first ``k`` only."""
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            if members is not None:
                weight, bias = weight[:members], bias[:members]
            # [B, in] @ [K, in, out] broadcasts to [K, B, out] on the first layer. The bias is
            # expanded to [K, B, out] first: paddle's add that broadcasts [K, 1, out] over the
            # middle axis took as long as the matmul itself (256 wide), forward and backward.
            x = paddle.matmul(x, weight)
            x = x + bias.expand(x.shape)
            if index < last:
                x = F.relu(x)
        return x.squeeze(-1)


class _ContinuousActorCritic(Model):
    """An actor MLP and an ensemble of Q-networks over ``concat(obs, action)``."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        actor_out: int,
        hidden_sizes: Sequence[int],
        num_critics: int,
    ) -> None:
        super().__init__()
        self.obs_dim = positive_int("obs_dim", obs_dim)
        self.act_dim = positive_int("act_dim", act_dim)
        self.actor = mlp(obs_dim, actor_out, hidden_sizes)
        self.critic = EnsembleMLP(obs_dim + act_dim, hidden_sizes, num_critics)

    def value(self, obs: paddle.Tensor, act: paddle.Tensor) -> paddle.Tensor:
        """Q values of every critic, ``[num_critics, B]``."""
        return self.critic(paddle.concat([obs, act], axis=-1))

    def Q1(self, obs: paddle.Tensor, act: paddle.Tensor) -> paddle.Tensor:
        """The first critic's Q values ``[B]`` (PARL's TD3 name), computing that critic only."""
        return self.critic(paddle.concat([obs, act], axis=-1), members=1)[0]

    def get_actor_params(self) -> list[paddle.Tensor]:
        """The parameters the actor's optimizer updates."""
        return self.actor.parameters()

    def get_critic_params(self) -> list[paddle.Tensor]:
        """The parameters the critic's optimizer updates."""
        return self.critic.parameters()


class DeterministicActorCritic(_ContinuousActorCritic):
    """DDPG's and TD3's model: ``policy(obs) = tanh(mlp(obs))`` in ``[-1, 1]``, Q ensemble.

    Args:
        obs_dim: observation size.
        act_dim: action size (actions in ``[-1, 1]``; map them with
            ``parl.env.ActionMappingWrapper``).
        hidden_sizes: widths of the hidden layers of the actor and of each critic.
        num_critics: 1 for DDPG, 2 for TD3's clipped double-Q.

    Examples:
        >>> model = DeterministicActorCritic(3, 1, hidden_sizes=(32, 32), num_critics=2)
        >>> obs = paddle.zeros([5, 3])
        >>> list(model.value(obs, model.policy(obs)).shape)
        [2, 5]
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (256, 256),
        num_critics: int = 1,
    ) -> None:
        super().__init__(obs_dim, act_dim, act_dim, hidden_sizes, num_critics)

    def policy(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Deterministic actions in ``[-1, 1]``."""
        return paddle.tanh(self.actor(obs))

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        """The action (what ``save_inference_model`` exports)."""
        return self.policy(obs)


class GaussianActorCritic(_ContinuousActorCritic):
    """SAC's model: ``policy(obs)`` → ``(mean, log_std)`` of the pre-``tanh`` Gaussian.

    ``log_std`` is clipped to ``[-20, 2]``.

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
        super().__init__(obs_dim, act_dim, 2 * act_dim, hidden_sizes, num_critics)

    def policy(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """Mean and log standard deviation, each ``[B, act_dim]``."""
        mean, log_std = paddle.split(self.actor(obs), 2, axis=-1)
        return mean, paddle.clip(log_std, LOG_STD_MIN, LOG_STD_MAX)

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        """The greedy action ``tanh(mean)`` (what ``save_inference_model`` exports)."""
        return paddle.tanh(self.policy(obs)[0])


class GaussianActorCriticValue(GaussianActorCritic):
    """IQL's model: :class:`GaussianActorCritic` plus a state-value network ``V(s)``.

    Args:
        obs_dim, act_dim, hidden_sizes, num_critics: as :class:`GaussianActorCritic`; the
            value network has the same hidden sizes.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (256, 256),
        num_critics: int = 2,
    ) -> None:
        super().__init__(obs_dim, act_dim, hidden_sizes, num_critics)
        self.state_value_net = mlp(obs_dim, 1, hidden_sizes)

    def state_value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """``V(s)``, ``[B]``."""
        return self.state_value_net(obs).squeeze(-1)

    def get_value_params(self) -> list[paddle.Tensor]:
        """The parameters the value network's optimizer updates."""
        return self.state_value_net.parameters()


class DiscreteActorCritic(Model):
    """A2C's model: a tanh trunk with a policy head (logits) and a value head.

    With ``shared=False`` the value head has a trunk of its own (as SB3's A2C and PPO
    policies): the value loss, whose targets grow with the episode length, then no longer
    shapes the policy's features.

    Args:
        obs_dim: observation size.
        act_dim: number of discrete actions.
        hidden_sizes: widths of the hidden layers (of each trunk).
        shared: one trunk for the policy and the value (PARL's Atari model), or one each.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (64, 64),
        shared: bool = True,
    ) -> None:
        super().__init__()
        sizes = [positive_int("obs_dim", obs_dim), *hidden_sizes]

        def trunk() -> paddle.nn.Sequential:
            layers: list[paddle.nn.Layer] = []
            for fan_in, fan_out in itertools.pairwise(sizes):
                layers += [paddle.nn.Linear(fan_in, fan_out, _uniform(fan_in)), paddle.nn.Tanh()]
            return paddle.nn.Sequential(*layers)

        self.trunk = trunk()
        # Not registered twice when shared: the state dict keeps PARL-style names only.
        self.v_trunk = None if shared else trunk()
        self.pi = paddle.nn.Linear(sizes[-1], positive_int("act_dim", act_dim))
        self.v = paddle.nn.Linear(sizes[-1], 1)

    def policy_and_value(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """Logits ``[B, act_dim]`` and values ``[B]`` (one pass through a shared trunk)."""
        hidden = self.trunk(obs)
        v_hidden = hidden if self.v_trunk is None else self.v_trunk(obs)
        return self.pi(hidden), self.v(v_hidden).squeeze(-1)

    def policy(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Action logits."""
        return self.pi(self.trunk(obs))

    def value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """State values ``[B]``."""
        trunk = self.trunk if self.v_trunk is None else self.v_trunk
        return self.v(trunk(obs)).squeeze(-1)

    def forward(self, obs: paddle.Tensor) -> paddle.Tensor:
        """The action logits (what ``save_inference_model`` exports)."""
        return self.policy(obs)
