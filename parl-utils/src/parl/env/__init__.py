"""PARL 2.x's ``parl.env`` on gymnasium: old-API compatibility, action mapping, env wrappers.

As in PARL, the package exports the contents of ``compat_wrappers``, ``continuous_wrappers`` and
``vector_env``, and :func:`make_vector_env` (:func:`parl.utils.make_vector_env`: a gymnasium or
an EnvPool vector env by one argument, ``engine``); ``parl.env.mujoco_wrappers``
(``wrap_rms``), ``parl.env.atari_wrappers`` (``wrap_deepmind``), ``parl.env.vector_engines``
(EnvPool, extra ``[envpool]``) and ``parl.env.multiagent_env`` (``MAenv``, extra
``[multiagent]``) are imported by their module path.

Examples:
    >>> import gymnasium as gym
    >>> from parl.env import CompatWrapper
    >>> env = CompatWrapper(gym.make("CartPole-v1"))
    >>> obs = env.reset()
    >>> obs, reward, done, info = env.step(0)
"""

from parl.env.compat_wrappers import (
    V_GYM_CHANGED,
    V_NPRANDOM_CHANGED,
    CompatWrapper,
    LegacyGymWrapper,
    is_gym_version_ge,
)
from parl.env.continuous_wrappers import ActionMappingWrapper
from parl.env.vector_env import VectorEnv
from parl.utils.rollout import make_vector_env

__all__ = [
    "V_GYM_CHANGED",
    "V_NPRANDOM_CHANGED",
    "ActionMappingWrapper",
    "CompatWrapper",
    "LegacyGymWrapper",
    "VectorEnv",
    "is_gym_version_ge",
    "make_vector_env",
]
