"""Deep Deterministic Policy Gradient (DDPG) and its hyperparameters.

DDPG is also the skeleton of :class:`~parl_algos_ac.td3.TD3` and :class:`~parl_algos_ac.sac.SAC`:
one model with an actor and critics, a target copy of it, two optimizers, and a ``learn`` that
takes a critic step, then an actor step, then a soft target update. The subclasses change the
critic's target and the actor's loss.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from parl.core.batch import (
    BatchLike,
    as_batch_continuous_actions,
    as_batch_obs,
    as_batch_vector,
    to_tensor,
)
from parl.core.config import AlgorithmConfig
from parl.core.paddle import Algorithm, Model
from parl.core.target import make_target, update_target

import paddle

from parl_algos_ac.config import DDPGConfig, check_unit_actions, q_shape_message

__all__ = ["DDPG", "DDPGConfig"]

_Batch = tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor]


def _stack_q(q: Any, batch: int, where: str) -> paddle.Tensor:
    """Bring what ``model.value`` returned to ``[num_critics, B]``.

    Accepted: one critic's ``[B]`` or ``[B, 1]``; a tuple or list of those (PARL's
    ``(Q1, Q2)``); an ensemble's ``[num_critics, B]``.
    """
    if isinstance(q, (tuple, list)):
        return paddle.stack([_stack_q(item, batch, where)[0] for item in q])
    if isinstance(q, paddle.Tensor):
        if q.ndim == 1 and q.shape[0] == batch:
            return q.unsqueeze(0)
        if q.ndim == 2 and q.shape[0] == batch and q.shape[1] == 1:
            return q.reshape([1, batch])
        if q.ndim == 2 and q.shape[1] == batch:
            return q
    shape = list(q.shape) if isinstance(q, paddle.Tensor) else type(q).__name__
    raise ValueError(q_shape_message(where, batch, shape))


def _minimize(optimizer: paddle.optimizer.Optimizer, loss: paddle.Tensor) -> paddle.Tensor:
    """One step of ``optimizer`` on ``loss``; returns the loss, detached."""
    optimizer.clear_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()


class DDPG(Algorithm):
    """Deep Deterministic Policy Gradient, DDPG (Lillicrap et al., ICLR 2016).

    Paper: "Continuous control with deep reinforcement learning", arXiv:1509.02971.

    The critic regresses on ``y = r + gamma·(1 - terminal)·Q_target(s', mu_target(s'))``
    (mean squared error), the actor maximises ``Q(s, mu(s))``, and after both steps the target
    model moves towards the model by ``tau`` (PARL: a soft sync inside every ``learn``).
    Exploration noise is the caller's business (:class:`~parl_algos_ac.agent.ContinuousAgent`
    adds Gaussian noise). Actions live in ``[-1, 1]``; map them onto an environment's bounds
    with ``parl.env.ActionMappingWrapper``.

    Model contract (checked at construction): ``policy(obs)`` → actions ``[B, act_dim]`` in
    ``[-1, 1]``; ``value(obs, act)`` → Q values ``[B]``/``[B, 1]`` (or several critics, see
    :class:`~parl_algos_ac.models.EnsembleMLP`); ``get_actor_params()`` and
    ``get_critic_params()`` → the parameters of each optimizer.

    ``terminal`` marks *terminated* transitions only; a time-limit truncation is stored with
    ``terminal=0`` so that its target bootstraps.

    Args:
        model: the actor-critic model.
        gamma, tau, actor_lr, critic_lr: see :class:`DDPGConfig`; None keeps the config's value.
        config: a :class:`DDPGConfig` or a mapping of its fields.
        **options: further config fields.

    Examples:
        >>> import numpy as np
        >>> from parl_algos_ac import DDPG, DeterministicActorCritic
        >>> alg = DDPG(DeterministicActorCritic(3, 1), gamma=0.99, tau=0.005)
        >>> list(alg.predict(np.zeros((2, 3), np.float32)).shape)
        [2, 1]
    """

    Config: ClassVar[type[AlgorithmConfig]] = DDPGConfig
    config: DDPGConfig
    model: Model
    target_model: Model
    required_model_methods: ClassVar[tuple[str, ...]] = (
        "policy",
        "value",
        "get_actor_params",
        "get_critic_params",
    )

    def __init__(
        self,
        model: Model,
        gamma: float | None = None,
        tau: float | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        *,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        name = type(self).__name__
        if model is None:
            raise TypeError(f"{name} needs a parl.Model with policy() and value(), got None")
        super().__init__(
            model,
            config=config,
            gamma=gamma,
            tau=tau,
            actor_lr=actor_lr,
            critic_lr=critic_lr,
            **options,
        )
        self.target_model = make_target(model)
        self.actor_optimizer = paddle.optimizer.Adam(
            learning_rate=self.config.actor_lr,
            parameters=list(model.get_actor_params()),
            use_multi_tensor=True,
        )
        critic_params = list(model.get_critic_params())
        self.critic_optimizer = paddle.optimizer.Adam(
            learning_rate=self.config.critic_lr,
            parameters=critic_params,
            use_multi_tensor=True,
        )
        # The critic's own parameters, which an actor loss needs no gradient of (a parameter
        # the actor shares with the critic keeps its gradient).
        actor_ids = {id(param) for param in model.get_actor_params()}
        self._critic_only = [p for p in critic_params if id(p) not in actor_ids]

    # -- acting ---------------------------------------------------------------------------

    def predict(self, obs: BatchLike) -> paddle.Tensor:
        """Return the deterministic action ``mu(obs)`` (no gradients); one obs or a batch."""
        with paddle.no_grad():
            return self.model.policy(to_tensor(obs, "float32"))

    # -- learning -------------------------------------------------------------------------

    def learn(
        self,
        obs: BatchLike,
        action: BatchLike,
        reward: BatchLike,
        next_obs: BatchLike,
        terminal: BatchLike,
    ) -> tuple[paddle.Tensor, paddle.Tensor]:
        """One critic step, one actor step and a soft target update (PARL's order).

        Args:
            obs: observations ``[B, obs_dim]`` (tensors or numpy arrays, as every input).
            action: the actions taken ``[B, act_dim]`` in ``[-1, 1]``.
            reward: rewards ``[B]`` or ``[B, 1]``.
            next_obs: next observations, shaped like ``obs``.
            terminal: 1 where the episode terminated, else 0 (also 0 for a truncation).

        Returns:
            ``(critic_loss, actor_loss)`` as scalar tensors (call ``float`` on them only when
            logging, to save a host round trip per step).
        """
        obs, action, reward, next_obs, terminal = self._check_batch(
            obs, action, reward, next_obs, terminal
        )
        critic_loss = self._learn_critic(obs, action, self._target(reward, next_obs, terminal))
        actor_loss = self._learn_actor(obs)
        self.sync_target()
        return critic_loss, actor_loss

    def sync_target(self, decay: float | None = None) -> None:
        """Soft-update the target model: ``target = decay·target + (1 - decay)·model``.

        Args:
            decay: None uses ``1 - tau`` (PARL's default); 0 makes a hard copy.
        """
        update_target(
            self.model, self.target_model, 1.0 - self.config.tau if decay is None else decay
        )

    def _target(
        self, reward: paddle.Tensor, next_obs: paddle.Tensor, terminal: paddle.Tensor
    ) -> paddle.Tensor:
        """The critic's regression target ``[B]``, without gradients."""
        with paddle.no_grad():
            next_action = self._next_action(next_obs)
            next_q = self._q(self.target_model, next_obs, next_action).min(axis=0)
            return reward + self.config.gamma * (1.0 - terminal) * next_q

    def _next_action(self, next_obs: paddle.Tensor) -> paddle.Tensor:
        """The action the target is evaluated at: ``mu_target(s')``."""
        return self._call(self.target_model.policy, next_obs)

    def _learn_critic(
        self, obs: paddle.Tensor, action: paddle.Tensor, target: paddle.Tensor
    ) -> paddle.Tensor:
        """One step on the sum over critics of ``mean((Q_k(s, a) - y)²)``."""
        q = self._q(self.model, obs, action)
        critic_loss = (q - target).square().mean(axis=1).sum()
        return _minimize(self.critic_optimizer, critic_loss)

    def _actor_loss(self, obs: paddle.Tensor) -> paddle.Tensor:
        """``-mean Q_1(s, mu(s))``: the first critic judges the actor (TD3's choice too).

        A model with PARL's ``Q1(obs, act)`` method is asked for that critic alone.
        """
        action = self._call(self.model.policy, obs)
        return -self._q_for_actor(obs, action, first_only=True)[0].mean()

    def _q_for_actor(
        self, obs: paddle.Tensor, action: paddle.Tensor, first_only: bool = False
    ) -> paddle.Tensor:
        """:meth:`_q` of the model for an actor loss: the backward pass reaches the action
        through the critics but computes no gradients of the critics' own weights (the actor's
        optimizer would not use them; skipping them saves a weight-gradient matmul per layer).
        ``first_only`` uses the model's ``Q1`` where it has one (``[1, B]``).
        """
        flags = [param.stop_gradient for param in self._critic_only]
        for param in self._critic_only:
            param.stop_gradient = True
        try:
            q1 = getattr(self.model, "Q1", None) if first_only else None
            if q1 is not None:
                return _stack_q(self._call(q1, obs, action), obs.shape[0], "model.Q1")
            return self._q(self.model, obs, action)
        finally:
            for param, flag in zip(self._critic_only, flags, strict=True):
                param.stop_gradient = flag

    def _learn_actor(self, obs: paddle.Tensor) -> paddle.Tensor:
        return _minimize(self.actor_optimizer, self._actor_loss(obs))

    def _q(self, model: Model, obs: paddle.Tensor, action: paddle.Tensor) -> paddle.Tensor:
        """Every critic's Q values, ``[num_critics, B]``."""
        q = self._call(model.value, obs, action)
        return _stack_q(q, obs.shape[0], f"{type(self).__name__}.learn")

    def _call(self, method: Any, obs: paddle.Tensor, *rest: paddle.Tensor) -> Any:
        """Call a model method; a shape error names the inputs the model could not take."""
        try:
            return method(obs, *rest)
        except ValueError as exc:
            given = " with actions " + str(list(rest[0].shape)) if rest else ""
            raise ValueError(
                f"{type(self).__name__}: model.{method.__name__} could not take observations "
                f"{list(obs.shape)}{given}; feed [batch, obs_dim] (and [batch, act_dim]) with "
                f"the dimensions the model was built for ({exc})"
            ) from exc

    def _check_batch(
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any
    ) -> _Batch:
        """Convert and check a batch; numpy actions outside ``[-1, 1]`` are refused."""
        where = f"{type(self).__name__}.learn"
        obs = as_batch_obs(obs, where)
        next_obs = as_batch_obs(next_obs, where, "next_obs")
        if list(obs.shape) != list(next_obs.shape):
            raise ValueError(
                f"{where} needs obs and next_obs of the same shape [batch, obs_dim], got "
                f"{list(obs.shape)} and {list(next_obs.shape)}"
            )
        if not isinstance(action, paddle.Tensor):
            # A host-side check costs nothing here; a tensor's would wait for the device.
            check_unit_actions(action, where)
        batch = obs.shape[0]
        hint = f"{type(self).__name__} learns continuous actions [B, act_dim] in [-1, 1]"
        return (
            obs,
            as_batch_continuous_actions(action, batch, where, hint),
            as_batch_vector(reward, batch, "reward", where),
            next_obs,
            as_batch_vector(terminal, batch, "terminal", where),
        )
