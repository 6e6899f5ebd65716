"""Multi-Agent PPO (MAPPO): PPO on agent-steps with a centralised value function."""

from __future__ import annotations

from pydantic import Field, PositiveFloat

from parl_algos_pg import PPO, PPOConfig

__all__ = ["MAPPO", "MAPPOConfig"]


class MAPPOConfig(PPOConfig):
    """Hyperparameters of :class:`MAPPO`: PPO's, with the MAPPO paper's MPE defaults."""

    clip_param: float = Field(default=0.2, gt=0.0, le=1.0)
    """Clip range ε of the probability ratio (and of the value change when clipping it)."""

    initial_lr: PositiveFloat = 7e-4
    """Learning rate of Adam until ``learn(..., lr=...)`` sets another."""


class MAPPO(PPO):
    """Multi-Agent PPO, MAPPO (Yu et al., NeurIPS 2022 Datasets and Benchmarks).

    Paper: "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games",
    arXiv:2103.01955.

    Every agent-step is one PPO sample whose input row joins what the actor sees and what the
    centralised critic sees: ``[obs_i, one_hot(i), global_state]``. The model's ``policy``
    reads the first part (so ``predict`` also takes rows without the state), its ``value`` the
    agent's id and the global state; :class:`~parl_algos_marl.models.MAPPOModel` lays this out
    and holds one policy shared by the agents or one per agent. The objective, clipping,
    advantage normalisation and optimiser are :class:`parl_algos_pg.PPO`'s, unchanged;
    advantages come from ``parl.utils.compute_gae`` on the team reward per agent. Like PPO, it
    runs on the framework of its model (paddle or torch) and, on torch, on the model's device.
    """

    Config = MAPPOConfig
    config: MAPPOConfig
