"""Ready-made models for the multi-agent algorithms, following their model contracts.

* :class:`MAModel` for MADDPG: a decentralised actor and a centralised critic on every agent's
  observation and action (PARL 2.x's ``MAModel``);
* :class:`RNNAgentModel` and :class:`QMixerModel` for QMIX: a GRU agent network shared by the
  agents, and the monotonic mixer whose weights come from hypernetworks on the global state;
* :class:`MAPPOModel` for MAPPO: a policy on an agent's observation and a value on the global
  state;
* :class:`COMAModel` for COMA: a GRU policy shared by the agents and a critic of every action
  of one agent given the others'.

Each is written once for paddle and torch: ``backend=`` picks the framework (default
:func:`parl.get_backend`), and both build the same layers under the same names.
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

import numpy as np

from parl_algos_marl.coma import critic_input_dim

__all__ = ["COMAModel", "MAModel", "MAPPOModel", "QMixerModel", "RNNAgentModel", "mlp"]

# Bounds of a continuous actor's log standard deviation.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


def mlp(
    in_dim: int,
    out_dim: int,
    hidden_sizes: Sequence[int],
    *,
    backend: str | None = None,
    fan_in_init: bool = False,
) -> Any:
    """A ReLU MLP ``in_dim → hidden_sizes → out_dim`` with a linear output, of the framework
    ``backend`` (default :func:`parl.get_backend`).

    ``fan_in_init`` draws every weight and bias from ``U(±1/√fan_in)`` on both frameworks
    (torch's default); without it each framework initialises its own way (paddle: Xavier-uniform
    weights and zero biases)."""
    ops = ops_of_backend(backend or get_backend())
    sizes = [positive_int("in_dim", in_dim), *hidden_sizes, positive_int("out_dim", out_dim)]
    layers: list[Any] = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        layer = (
            fan_in_linear(ops, fan_in, fan_out) if fan_in_init else ops.nn.Linear(fan_in, fan_out)
        )
        layers += [layer, ops.nn.ReLU()]
    return ops.nn.Sequential(*layers[:-1])


def fan_in_linear(ops: Any, fan_in: int, fan_out: int) -> Any:
    """A ``Linear`` layer of ``ops``' framework with weights and bias from ``U(±1/√fan_in)``:
    torch's default, and what PyMARL's QMIX networks start from on either framework."""
    bound = 1.0 / math.sqrt(fan_in)
    return ops.linear(fan_in, fan_out, bound, bound)


class MAModel(Model):
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
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        critic_in_dim: int,
        continuous_actions: bool = False,
        hidden_sizes: Sequence[int] = (64, 64),
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        self.continuous_actions = continuous_actions
        self.act_dim = positive_int("act_dim", act_dim)
        outputs = 2 * act_dim if continuous_actions else act_dim
        self.actor_model = mlp(obs_dim, outputs, hidden_sizes, backend=self.backend_name)
        self.critic_model = mlp(critic_in_dim, 1, hidden_sizes, backend=self.backend_name)

    def policy(self, obs: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        out = self.actor_model(obs)
        if not self.continuous_actions:
            return out
        mean, log_std = out[..., : self.act_dim], out[..., self.act_dim :]
        return mean, self.ops.clip(log_std, LOG_STD_MIN, LOG_STD_MAX)

    def value(self, obs_n: Sequence[Tensor], act_n: Sequence[Tensor]) -> Tensor:
        return self.critic_model(self.ops.concat([*obs_n, *act_n], axis=-1)).squeeze(-1)

    def get_actor_params(self) -> list[Tensor]:
        return list(self.actor_model.parameters())

    def get_critic_params(self) -> list[Tensor]:
        return list(self.critic_model.parameters())


class RNNAgentModel(Model):
    """QMIX's agent network, shared by the agents: ``Linear → ReLU → GRUCell → Linear``.

    ``forward(obs, hidden)`` takes observations ``[N, obs_dim]`` and hidden states
    ``[N, hidden_dim]`` (``N`` = batch × agents) and returns ``(q [N, n_actions], hidden)``;
    ``init_hidden()`` is the hidden state of an episode's start, ``[1, hidden_dim]``.

    Both Linear layers start from weights and biases in ``U(±1/√fan_in)`` and the GRU cell
    from ``U(±1/√hidden_dim)`` on either framework (torch's defaults, PyMARL's start): with
    paddle's own Linear start (Xavier weights, zero biases) QMIX did not learn simple_spread.

    Args:
        obs_dim: an agent's observation size (with its one-hot id where the caller adds one).
        n_actions: the number of actions.
        hidden_dim: the width of the layers and the GRU state (PyMARL: 64).
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self, obs_dim: int, n_actions: int, hidden_dim: int = 64, *, backend: str | None = None
    ) -> None:
        super().__init__()
        self.hidden_dim = positive_int("hidden_dim", hidden_dim)
        self.fc1 = fan_in_linear(self.ops, positive_int("obs_dim", obs_dim), hidden_dim)
        self.relu = self.nn.ReLU()
        self.rnn = self.nn.GRUCell(hidden_dim, hidden_dim)  # U(±1/√hidden) on both frameworks
        self.fc2 = fan_in_linear(self.ops, hidden_dim, positive_int("n_actions", n_actions))

    def init_hidden(self) -> Tensor:
        return self.ops.zeros([1, self.hidden_dim], "float32", self.ops.device_of(self))

    def forward(self, obs: Tensor, hidden: Tensor) -> tuple[Tensor, Tensor]:
        x = self.relu(self.fc1(obs))
        hidden = self.ops.gru_cell_step(self.rnn, x, hidden.reshape([-1, self.hidden_dim]))
        return self.fc2(hidden), hidden


class QMixerModel(Model):
    """QMIX's monotonic mixer: ``Q_tot = elu(q·|W1(s)| + b1(s))·|w2(s)| + V(s)``.

    The mixing weights come from hypernetworks on the global state ``s`` and pass through
    ``abs``, so ``Q_tot`` never decreases when an agent's ``q`` grows (Rashid et al. 2018,
    eq. 5): each agent's greedy action is then the team's. ``forward(agent_qs [B, T, n],
    states [B, T, state_dim])`` returns ``[B, T, 1]``.

    Every hypernetwork layer starts from weights and biases in ``U(±1/√fan_in)`` on either
    framework, as :class:`RNNAgentModel`.

    Args:
        n_agents: the number of agents (QMIX reads it as ``qmixer_model.n_agents``).
        state_dim: the global state's size.
        embed_dim: the mixing layer's width (PyMARL: 32).
        hypernet_dim: the width of the weight hypernetworks' hidden layer (PyMARL: 64).
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        n_agents: int,
        state_dim: int,
        embed_dim: int = 32,
        hypernet_dim: int = 64,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        self.n_agents = positive_int("n_agents", n_agents)
        self.embed_dim = positive_int("embed_dim", embed_dim)
        framework, fan_in = self.backend_name, {"fan_in_init": True}
        w1_out = n_agents * embed_dim
        self.hyper_w1 = mlp(state_dim, w1_out, (hypernet_dim,), backend=framework, **fan_in)
        self.hyper_b1 = fan_in_linear(self.ops, state_dim, embed_dim)
        self.hyper_w2 = mlp(state_dim, embed_dim, (hypernet_dim,), backend=framework, **fan_in)
        self.hyper_v = mlp(state_dim, 1, (embed_dim,), backend=framework, **fan_in)
        self.elu = self.nn.ELU()

    def forward(self, agent_qs: Tensor, states: Tensor) -> Tensor:
        batch, steps = agent_qs.shape[0], agent_qs.shape[1]
        s = states.reshape([batch * steps, -1])
        qs = agent_qs.reshape([batch * steps, 1, self.n_agents])
        w1 = self.hyper_w1(s).abs().reshape([-1, self.n_agents, self.embed_dim])
        b1 = self.hyper_b1(s).reshape([-1, 1, self.embed_dim])
        hidden = self.elu(qs @ w1 + b1)
        w2 = self.hyper_w2(s).abs().reshape([-1, self.embed_dim, 1])
        v = self.hyper_v(s).reshape([-1, 1, 1])
        return (hidden @ w2 + v).reshape([batch, steps, 1])


UNAVAILABLE_LOGIT = -1e9
"""The logit of an action an agent does not have: its probability is exactly 0 in float32."""


def _action_counts(n_actions: int | Sequence[int], n_agents: int) -> list[int]:
    counts = [n_actions] * n_agents if isinstance(n_actions, int) else list(n_actions)
    if len(counts) != n_agents:
        raise ValueError(
            f"n_actions needs one count for all agents or one per agent ({n_agents}), got "
            f"{n_actions!r}"
        )
    return [positive_int(f"n_actions[{i}]", count) for i, count in enumerate(counts)]


class MAPPOModel(Model):
    """MAPPO's actor(s) and centralised critic on rows ``[obs_i, one_hot(i), global_state]``.

    ``policy(rows)`` gives logits ``[B, n_actions]`` from the first ``obs_dim + n_agents``
    columns (rows without the state work too); ``value(rows)`` gives ``[B]`` from the id and
    the state. With ``shared_policy`` one actor sees ``[obs_i, one_hot(i)]``; without it each
    agent has an actor of its own, chosen by the id (each learns only from its agent's rows).
    With ``centralised_critic=False`` the critic sees what the actor sees, ``[obs_i,
    one_hot(i)]``, and never the state: independent PPO, IPPO (de Witt et al., "Is Independent
    Learning All You Need in the StarCraft Multi-Agent Challenge?", arXiv:2011.09533), the
    independent learner MAPPO is compared with.

    Agents with fewer actions than others (``n_actions`` a list: the speaker's 3 words and the
    listener's 5 moves) share the widest logits; the ones an agent lacks get a logit of
    :data:`UNAVAILABLE_LOGIT` (by its id), so they are never sampled and carry no probability.

    Args:
        obs_dim: an agent's observation size (zero-pad the shorter ones:
            ``ParticleEnv(..., pad_observations=True)``).
        state_dim: the global state's size.
        n_actions: actions per agent: one count for all, or one per agent.
        n_agents: the number of agents.
        shared_policy: one actor for all agents (parameter sharing) or one each.
        hidden_sizes: the widths of the actor's and critic's hidden layers.
        centralised_critic: the critic sees the global state (MAPPO) or the agent's own
            observation (IPPO).
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        obs_dim: int,
        state_dim: int,
        n_actions: int | Sequence[int],
        n_agents: int,
        shared_policy: bool = True,
        hidden_sizes: Sequence[int] = (64, 64),
        centralised_critic: bool = True,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        self.obs_dim = positive_int("obs_dim", obs_dim)
        self.n_agents = positive_int("n_agents", n_agents)
        self.shared_policy = shared_policy
        actors = 1 if shared_policy else n_agents
        actor_in = obs_dim + n_agents if shared_policy else obs_dim
        framework = self.backend_name
        counts = _action_counts(n_actions, self.n_agents)
        width = max(counts)
        self.actors = self.ops.layer_list(
            [mlp(actor_in, width, hidden_sizes, backend=framework) for _ in range(actors)]
        )
        self.masks_actions = len(set(counts)) > 1
        if self.masks_actions:
            lacks = np.arange(width) >= np.array(counts)[:, None]
            penalty = np.where(lacks, UNAVAILABLE_LOGIT, 0.0).astype(np.float32)
            self.register_buffer("unavailable", self.ops.to_tensor(penalty), False)
        state_dim = positive_int("state_dim", state_dim)
        self.centralised_critic = centralised_critic
        critic_in = n_agents + (state_dim if centralised_critic else obs_dim)
        self.critic = mlp(critic_in, 1, hidden_sizes, backend=framework)

    def policy(self, rows: Tensor) -> Tensor:
        obs = rows[..., : self.obs_dim]
        ids = rows[..., self.obs_dim : self.obs_dim + self.n_agents]
        if self.shared_policy:
            logits = self.actors[0](self.ops.concat([obs, ids], axis=-1))
        else:
            per_actor = self.ops.stack([actor(obs) for actor in self.actors], axis=-2)
            logits = self.ops.sum(per_actor * ids.unsqueeze(-1), axis=-2)
        return logits + ids @ self.unavailable if self.masks_actions else logits

    def value(self, rows: Tensor) -> Tensor:
        if self.centralised_critic:
            return self.critic(rows[..., self.obs_dim :]).squeeze(-1)
        return self.critic(rows[..., : self.obs_dim + self.n_agents]).squeeze(-1)


class COMAModel(Model):
    """COMA's actor and centralised critic (PARL's ``ComaModel`` layout).

    ``policy(obs, hidden)`` is :class:`RNNAgentModel`'s forward (logits instead of Q values),
    shared by the agents; ``value(inputs)`` maps critic rows ``[..., critic_input_dim]`` (laid
    out by :class:`~parl_algos_marl.coma.COMA`, see
    :func:`~parl_algos_marl.coma.critic_input_dim`) to ``Q [..., n_actions]`` through two
    ReLU layers.

    Args:
        obs_dim: what the policy sees per agent (with its one-hot id where the caller adds one).
        state_dim: the global state's size.
        n_agents: the number of agents.
        n_actions: actions per agent.
        rnn_hidden_dim: the width of the actor and its GRU state (PARL, EPyMARL: 64).
        critic_hidden_dim: the width of the critic's hidden layers (PARL: 128, EPyMARL: 64).
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        obs_dim: int,
        state_dim: int,
        n_agents: int,
        n_actions: int,
        rnn_hidden_dim: int = 64,
        critic_hidden_dim: int = 128,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        self.n_agents = positive_int("n_agents", n_agents)
        self.n_actions = positive_int("n_actions", n_actions)
        framework = self.backend_name
        self.actor_model = RNNAgentModel(obs_dim, n_actions, rnn_hidden_dim, backend=framework)
        critic_in = critic_input_dim(
            obs_dim, positive_int("state_dim", state_dim), n_agents, n_actions
        )
        hidden = (positive_int("critic_hidden_dim", critic_hidden_dim),) * 2
        self.critic_model = mlp(critic_in, n_actions, hidden, backend=framework)

    def init_hidden(self) -> Tensor:
        return self.actor_model.init_hidden()

    def policy(self, obs: Tensor, hidden: Tensor) -> tuple[Tensor, Tensor]:
        return self.actor_model(obs, hidden)

    def value(self, inputs: Tensor) -> Tensor:
        return self.critic_model(inputs)

    def get_actor_params(self) -> list[Tensor]:
        return list(self.actor_model.parameters())

    def get_critic_params(self) -> list[Tensor]:
        return list(self.critic_model.parameters())
