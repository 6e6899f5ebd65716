"""A small torch algorithm and a ``learn`` batch for every registered algorithm with a tensor
update, for the tests of the GPU path (no host round trip, captured updates).

``LEARNERS[name](device, **config)`` returns ``(algorithm, batch)``: ``algorithm.learn(*batch)``
takes one step. ``HOST_UPDATES`` names the algorithms whose update is numpy (no tensor learner).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch

from parl_algos_ac import (
    A2C,
    CQL,
    DDPG,
    DT,
    IQL,
    OAC,
    SAC,
    TD3,
    DecisionTransformerModel,
    DeterministicActorCritic,
    DiscreteActorCritic,
    GaussianActorCritic,
    GaussianActorCriticValue,
)
from parl_algos_dqn import DDQN, DQN, QNetwork
from parl_algos_impala import IMPALA, MLPModel
from parl_algos_marl import (
    COMA,
    MADDPG,
    MAPPO,
    QMIX,
    COMAModel,
    MAModel,
    MAPPOModel,
    QMixerModel,
    RNNAgentModel,
)
from parl_algos_pg import PPO, DiscretePPOModel, PolicyGradient

B = 8
HOST_UPDATES = frozenset({"ES", "CMAES", "GA"})
"""Evolution strategies: the search is numpy on the host, the model only acts."""

Learner = Callable[..., tuple[Any, tuple[Any, ...]]]


def _rand(device: Any, *shape: int) -> torch.Tensor:
    return torch.rand(*shape, device=device)


def _ints(device: Any, high: int, *shape: int) -> torch.Tensor:
    return torch.randint(0, high, shape, device=device)


def _transitions(device: Any, obs_dim: int, discrete: bool) -> tuple[torch.Tensor, ...]:
    action = _ints(device, 2, B) if discrete else _rand(device, B, 1) * 2 - 1
    obs, next_obs = _rand(device, B, obs_dim), _rand(device, B, obs_dim)
    return obs, action, _rand(device, B), next_obs, torch.zeros(B, device=device)


def _on_policy(device: Any, obs_dim: int) -> tuple[torch.Tensor, ...]:
    value, returns, adv = _rand(device, B), _rand(device, B), torch.randn(B, device=device)
    return _rand(device, B, obs_dim), _ints(device, 2, B), value, returns, -_rand(device, B), adv


def _qmix_batch(device: Any) -> tuple[torch.Tensor, ...]:
    episodes, steps = 2, 5
    zeros = torch.zeros(episodes, steps, 1, device=device)
    return (
        _rand(device, episodes, steps, 6),
        _ints(device, 3, episodes, steps, 2),
        _rand(device, episodes, steps, 1),
        zeros,
        _rand(device, episodes, steps, 2, 3),
        torch.ones(episodes, steps, 2, 3, device=device),
        zeros,
    )


def _segments(device: Any) -> tuple[torch.Tensor, ...]:
    steps = 4
    actions = _rand(device, B, steps, 1) * 2 - 1
    timesteps = torch.arange(steps, device=device).repeat(B, 1)
    return (
        _rand(device, B, steps, 3),
        actions,
        _rand(device, B, steps),
        timesteps,
        torch.ones(B, steps, device=device),
    )


def _continuous(cls: type, model: Callable[[], Any], **fixed: Any) -> Learner:
    def build(device: Any, **config: Any) -> tuple[Any, tuple[Any, ...]]:
        alg = cls(model(), device=device, **fixed, **config)
        return alg, _transitions(device, 3, discrete=False)

    return build


def _build(make: Callable[..., Any], batch: Callable[[Any], tuple[Any, ...]]) -> Learner:
    def build(device: Any, **config: Any) -> tuple[Any, tuple[Any, ...]]:
        alg = make(**config)
        alg.to(device)
        return alg, batch(device)

    return build


def _deterministic(critics: int = 1) -> Callable[[], Any]:
    return lambda: DeterministicActorCritic(3, 1, num_critics=critics, backend="torch")


def _gaussian() -> Any:
    return GaussianActorCritic(3, 1, backend="torch")


def _maddpg(**config: Any) -> Any:
    model = MAModel(3, 2, 10, False, (16,), backend="torch")
    return MADDPG(model, 0, [gym.spaces.Discrete(2)] * 2, **config)


def _maddpg_batch(device: Any) -> tuple[Any, ...]:
    obs = [_rand(device, B, 3), _rand(device, B, 3)]
    return obs, [_rand(device, B, 2), _rand(device, B, 2)], _rand(device, B)


LEARNERS: dict[str, Learner] = {
    "DQN": _build(
        lambda **c: DQN(QNetwork(4, 2, backend="torch"), **c),
        lambda d: _transitions(d, 4, discrete=True),
    ),
    "DDQN": _build(
        lambda **c: DDQN(QNetwork(4, 2, backend="torch"), **c),
        lambda d: _transitions(d, 4, discrete=True),
    ),
    "DDPG": _continuous(DDPG, _deterministic()),
    "TD3": _continuous(TD3, _deterministic(2)),
    "SAC": _continuous(SAC, _gaussian, alpha="auto"),
    "OAC": _continuous(OAC, _gaussian),
    "CQL": _continuous(CQL, _gaussian, with_lagrange=True),
    "IQL": _continuous(IQL, lambda: GaussianActorCriticValue(3, 1, backend="torch")),
    "A2C": _build(
        lambda **c: A2C(DiscreteActorCritic(4, 2, backend="torch"), **c),
        lambda d: (_rand(d, B, 4), _ints(d, 2, B), _rand(d, B), _rand(d, B), 1e-3, -0.01),
    ),
    "PolicyGradient": _build(
        lambda **c: PolicyGradient(QNetwork(4, 2, backend="torch"), **c),
        lambda d: (_rand(d, B, 4), _ints(d, 2, B), _rand(d, B)),
    ),
    "PPO": _build(
        lambda **c: PPO(DiscretePPOModel(4, 2, backend="torch"), **c),
        lambda d: _on_policy(d, 4),
    ),
    "MAPPO": _build(
        lambda **c: MAPPO(MAPPOModel(3, 4, 2, 2, hidden_sizes=(8,), backend="torch"), **c),
        lambda d: _on_policy(d, 3 + 2 + 4),
    ),
    "IMPALA": _build(
        lambda **c: IMPALA(MLPModel(4, 3, hidden_size=8, backend="torch"), 4, **c),
        lambda d: (_rand(d, B, 4), _ints(d, 3, B), _rand(d, B, 3), _rand(d, B), torch.zeros(B)),
    ),
    "MADDPG": _build(_maddpg, _maddpg_batch),
    "QMIX": _build(  # TD(λ) targets: a loop over the steps that must not read values back
        lambda **c: QMIX(
            RNNAgentModel(3, 3, 8, backend="torch"),
            QMixerModel(2, 6, 4, 8, backend="torch"),
            **{"td_lambda": 0.6, **c},
        ),
        _qmix_batch,
    ),
    "DT": _build(
        lambda **c: DT(DecisionTransformerModel(3, 1, 16, 1, 1, 8, 0.0, backend="torch"), **c),
        _segments,
    ),
    "COMA": _build(
        lambda **c: COMA(COMAModel(3, 6, 2, 3, 8, 16, backend="torch"), 3, 2, **c), _qmix_batch
    ),
}
