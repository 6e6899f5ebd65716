"""Actor-critic models for IMPALA (an MLP, a small CNN for Atari) and the env they act in.

The actors build their env and model with :func:`make_env` and :func:`make_model`; as parts of
this installed package they are found by name in the actors' jobs, with nothing to ship. The
models are written once for paddle and torch (``backend=`` picks, else
:func:`parl.get_backend`) and build the same layers under the same names on both.
"""

from __future__ import annotations

from typing import Any

from parl.core.neutral import Model
from parl.core.ops import Tensor

import gymnasium as gym

__all__ = ["AtariModel", "MLPModel", "is_atari", "make_env", "make_model"]


class MLPModel(Model):
    """``policy(obs)`` → logits ``[B, act_dim]``; ``value(obs)`` → ``[B]``; a torso each.

    CartPole's discounted returns reach ~100 (γ = 0.99, time limits bootstrapped), far from
    where a linear head on tanh features starts, and Adam moves each weight by about the learning
    rate per step: unscaled, the value was still ~59 everywhere after 200k frames, so the
    advantages stayed biased and noisy and the policy, nearly uniform, lost its greedy returns of
    500 again. The value head's output is therefore multiplied by ``value_scale``, and the
    policy and the value have separate torsos (with a shared one, the large value error drove
    the shared layers and the policy stayed nearly uniform: 0.62 nats per step of ln 2 = 0.69
    after 120k frames).

    Args:
        obs_dim: observation size.
        act_dim: number of discrete actions.
        hidden_size: width of the two hidden layers of each torso.
        value_scale: the value head's output is multiplied by this (about the returns' scale
            over 10).
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_size: int = 64,
        value_scale: float = 10.0,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        self.value_scale = value_scale
        self.policy_torso = _mlp_torso(self.nn, obs_dim, hidden_size)
        self.value_torso = _mlp_torso(self.nn, obs_dim, hidden_size)
        self.policy_head = self.nn.Linear(hidden_size, act_dim)
        self.value_head = self.nn.Linear(hidden_size, 1)

    def policy(self, obs: Tensor) -> Tensor:
        """Action logits."""
        return self.policy_head(self.policy_torso(obs))

    def value(self, obs: Tensor) -> Tensor:
        """State values."""
        return self.value_scale * self.value_head(self.value_torso(obs)).squeeze(-1)


def _mlp_torso(nn: Any, obs_dim: int, hidden_size: int) -> Any:
    return nn.Sequential(
        nn.Linear(obs_dim, hidden_size),
        nn.Tanh(),
        nn.Linear(hidden_size, hidden_size),
        nn.Tanh(),
    )


class AtariModel(Model):
    """PARL's IMPALA Atari network, for stacked ``[4, 42, 42]`` uint8 frames (NCHW).

    Three convolutions and one hidden layer shared by the policy and value heads.

    Args:
        act_dim: number of discrete actions.
        backend: ``"paddle"`` or ``"torch"``; default :func:`parl.get_backend`.
    """

    def __init__(self, act_dim: int, *, backend: str | None = None) -> None:
        super().__init__()
        nn, ops = self.nn, self.ops
        self.conv = nn.Sequential(
            ops.conv2d_layer(4, 32, 5, stride=1, padding=2),
            nn.ReLU(),
            ops.max_pool2d_layer(2),
            ops.conv2d_layer(32, 32, 5, stride=1, padding=2),
            nn.ReLU(),
            ops.max_pool2d_layer(2),
            ops.conv2d_layer(32, 64, 4, stride=1, padding=1),
            nn.ReLU(),
            ops.max_pool2d_layer(2),
            nn.Flatten(),
            nn.Linear(64 * 4 * 4, 256),
            nn.ReLU(),
        )
        self.policy_head = nn.Linear(256, act_dim)
        self.value_head = nn.Linear(256, 1)

    def policy(self, obs: Tensor) -> Tensor:
        """Action logits."""
        return self.policy_head(self.conv(obs / 255.0))

    def value(self, obs: Tensor) -> Tensor:
        """State values."""
        return self.value_head(self.conv(obs / 255.0)).squeeze(-1)


def is_atari(env_id: str) -> bool:
    """Whether ``env_id`` is an Atari game (ALE), which gets the DeepMind wrappers."""
    return "NoFrameskip" in env_id or env_id.startswith("ALE/")


def make_env(env_id: str) -> gym.Env:
    """One env; Atari goes through ``parl.env.wrap_deepmind`` (42x42 frames, NCHW)."""
    if not is_atari(env_id):
        return gym.wrappers.RecordEpisodeStatistics(gym.make(env_id))
    from parl.env.atari_wrappers import wrap_deepmind

    import ale_py

    gym.register_envs(ale_py)
    # wrap_deepmind speaks PARL 2.x's old gym API outermost; vector envs need the gymnasium
    # env inside it.
    return wrap_deepmind(gym.make(env_id), dim=42, obs_format="NCHW").env


def make_model(env_id: str, backend: str | None = None) -> Model:
    """The model for ``env_id``: :class:`AtariModel` for Atari, else :class:`MLPModel`.

    ``backend`` picks the framework (``"paddle"`` or ``"torch"``; default
    :func:`parl.get_backend`).
    """
    env = make_env(env_id)
    actions = env.action_space
    if not isinstance(actions, gym.spaces.Discrete):
        raise ValueError(f"{env_id}: IMPALA's models need a Discrete action space, got {actions}")
    if is_atari(env_id):
        return AtariModel(int(actions.n), backend=backend)
    return MLPModel(gym.spaces.flatdim(env.observation_space), int(actions.n), backend=backend)
