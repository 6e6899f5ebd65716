"""Ready-made actor-critic models that follow the family's model contracts, written once for
paddle and torch (``backend=`` picks; default :func:`parl.get_backend`).

* :class:`DeterministicActorCritic` for DDPG and TD3: ``policy(obs)`` is ``tanh`` of an MLP;
* :class:`GaussianActorCritic` for SAC, OAC and CQL: ``policy(obs)`` gives ``(mean, log_std)``;
* :class:`GaussianActorCriticValue` for IQL: that, plus a state value ``V(s)``;
* :class:`DiscreteActorCritic` for A2C: logits and a state value.

The critics of the continuous models are an :class:`EnsembleMLP`: ``num_critics`` Q-networks
whose weights are stacked, so ``value(obs, act)`` evaluates all of them in one batched
matrix multiply per layer and returns ``[num_critics, B]``. A paddle and a torch model of the
same sizes have the same weight names (``actor.0.weight``, ``critic.weights.0``, ...); the
stacked critic weights share a layout, the ``Linear`` weights are transposed
(``parl.core.torch.interop``). Initialisation: ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, the
one the published results used.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from parl.core.backend import get_backend
from parl.core.neutral import Model
from parl.core.ops import Tensor, ops_of_backend
from parl.core.validation import positive_int

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


def _bound(fan_in: int) -> float:
    return 1.0 / math.sqrt(fan_in)


def mlp(
    in_dim: int, out_dim: int, hidden_sizes: Sequence[int], *, backend: str | None = None
) -> Any:
    """A ReLU MLP ``in_dim → hidden_sizes → out_dim`` with a linear output (zero output bias),
    a ``Sequential`` of ``backend``'s layers."""
    ops = ops_of_backend(backend or get_backend())
    layers = []
    sizes = [positive_int("in_dim", in_dim), *hidden_sizes]
    for fan_in, fan_out in itertools.pairwise(sizes):
        layers += [ops.linear(fan_in, fan_out, _bound(fan_in), _bound(fan_in)), ops.nn.ReLU()]
    fan_in = sizes[-1]
    layers.append(ops.linear(fan_in, positive_int("out_dim", out_dim), _bound(fan_in)))
    return ops.nn.Sequential(*layers)


class EnsembleMLP(Model):
    """``num_members`` ReLU MLPs with one output each, evaluated together.

    ``forward(x)`` takes ``[B, in_dim]`` and returns ``[num_members, B]``: each layer is one
    batched matmul over the stacked weights ``[num_members, fan_in, fan_out]``.

    Args:
        in_dim: input size.
        hidden_sizes: widths of the hidden layers.
        num_members: how many networks.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        in_dim: int,
        hidden_sizes: Sequence[int],
        num_members: int,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        self.num_members = positive_int("num_members", num_members)
        sizes = [positive_int("in_dim", in_dim), *hidden_sizes, 1]
        self.weights = self.nn.ParameterList()
        self.biases = self.nn.ParameterList()
        for fan_in, fan_out in itertools.pairwise(sizes):
            bound = _bound(fan_in)
            self.weights.append(
                self.ops.uniform_parameter([self.num_members, fan_in, fan_out], bound)
            )
            self.biases.append(self.ops.uniform_parameter([self.num_members, 1, fan_out], bound))
        self.activation = self.nn.ReLU()

    def forward(self, x: Tensor, members: int | None = None) -> Tensor:
        """``[B, in_dim]`` → ``[num_members, B]``; ``members=k`` evaluates the first ``k`` only."""
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            if members is not None:
                weight, bias = weight[:members], bias[:members]
            x = self.ops.batched_linear(x, weight, bias)
            if index < last:
                x = self.activation(x)
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
        self.actor = mlp(obs_dim, actor_out, hidden_sizes, backend=self.backend_name)
        self.critic = EnsembleMLP(
            obs_dim + act_dim, hidden_sizes, num_critics, backend=self.backend_name
        )

    def value(self, obs: Tensor, act: Tensor) -> Tensor:
        """Q values of every critic, ``[num_critics, B]``."""
        return self.critic(self.ops.concat([obs, act], axis=-1))

    def Q1(self, obs: Tensor, act: Tensor) -> Tensor:
        """The first critic's Q values ``[B]`` (PARL's TD3 name), computing that critic only."""
        return self.critic(self.ops.concat([obs, act], axis=-1), members=1)[0]

    def get_actor_params(self) -> list[Tensor]:
        """The parameters the actor's optimizer updates."""
        return list(self.actor.parameters())

    def get_critic_params(self) -> list[Tensor]:
        """The parameters the critic's optimizer updates."""
        return list(self.critic.parameters())


class DeterministicActorCritic(_ContinuousActorCritic):
    """DDPG's and TD3's model: ``policy(obs) = tanh(mlp(obs))`` in ``[-1, 1]``, Q ensemble.

    Args:
        obs_dim: observation size.
        act_dim: action size (actions in ``[-1, 1]``; map them with
            ``parl.env.ActionMappingWrapper``).
        hidden_sizes: widths of the hidden layers of the actor and of each critic.
        num_critics: 1 for DDPG, 2 for TD3's clipped double-Q.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.

    Examples:
        >>> import paddle
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
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__(obs_dim, act_dim, act_dim, hidden_sizes, num_critics)

    def policy(self, obs: Tensor) -> Tensor:
        """Deterministic actions in ``[-1, 1]``."""
        return self.actor(obs).tanh()

    def forward(self, obs: Tensor) -> Tensor:
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
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (256, 256),
        num_critics: int = 2,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__(obs_dim, act_dim, 2 * act_dim, hidden_sizes, num_critics)

    def policy(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        """Mean and log standard deviation, each ``[B, act_dim]``."""
        out = self.actor(obs)
        mean, log_std = out[..., : self.act_dim], out[..., self.act_dim :]
        return mean, self.ops.clip(log_std, LOG_STD_MIN, LOG_STD_MAX)

    def forward(self, obs: Tensor) -> Tensor:
        """The greedy action ``tanh(mean)`` (what ``save_inference_model`` exports)."""
        return self.policy(obs)[0].tanh()


class GaussianActorCriticValue(GaussianActorCritic):
    """IQL's model: :class:`GaussianActorCritic` plus a state-value network ``V(s)``.

    Args:
        obs_dim, act_dim, hidden_sizes, num_critics, backend: as :class:`GaussianActorCritic`;
            the value network has the same hidden sizes.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (256, 256),
        num_critics: int = 2,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__(obs_dim, act_dim, hidden_sizes, num_critics)
        self.state_value_net = mlp(obs_dim, 1, hidden_sizes, backend=self.backend_name)

    def state_value(self, obs: Tensor) -> Tensor:
        """``V(s)``, ``[B]``."""
        return self.state_value_net(obs).squeeze(-1)

    def get_value_params(self) -> list[Tensor]:
        """The parameters the value network's optimizer updates."""
        return list(self.state_value_net.parameters())


class DiscreteActorCritic(Model):
    """A2C's model: a tanh trunk with a policy head (logits) and a value head.

    With ``shared=False`` the value head has a trunk of its own (as SB3's A2C and PPO
    policies): the value loss, whose targets grow with the episode length, then no longer
    shapes the policy's features. The heads start Xavier-uniform with zero bias.

    Args:
        obs_dim: observation size.
        act_dim: number of discrete actions.
        hidden_sizes: widths of the hidden layers (of each trunk).
        shared: one trunk for the policy and the value (PARL's Atari model), or one each.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (64, 64),
        shared: bool = True,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        sizes = [positive_int("obs_dim", obs_dim), *hidden_sizes]

        def trunk() -> Any:
            layers = []
            for fan_in, fan_out in itertools.pairwise(sizes):
                layers += [self.ops.linear(fan_in, fan_out, _bound(fan_in)), self.nn.Tanh()]
            return self.nn.Sequential(*layers)

        self.trunk = trunk()
        # Not registered twice when shared: the state dict keeps PARL-style names only.
        self.v_trunk = None if shared else trunk()
        self.pi = self.ops.linear(sizes[-1], positive_int("act_dim", act_dim))
        self.v = self.ops.linear(sizes[-1], 1)

    def policy_and_value(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        """Logits ``[B, act_dim]`` and values ``[B]`` (one pass through a shared trunk)."""
        hidden = self.trunk(obs)
        v_hidden = hidden if self.v_trunk is None else self.v_trunk(obs)
        return self.pi(hidden), self.v(v_hidden).squeeze(-1)

    def policy(self, obs: Tensor) -> Tensor:
        """Action logits."""
        return self.pi(self.trunk(obs))

    def value(self, obs: Tensor) -> Tensor:
        """State values ``[B]``."""
        trunk = self.trunk if self.v_trunk is None else self.v_trunk
        return self.v(trunk(obs)).squeeze(-1)

    def forward(self, obs: Tensor) -> Tensor:
        """The action logits (what ``save_inference_model`` exports)."""
        return self.policy(obs)
