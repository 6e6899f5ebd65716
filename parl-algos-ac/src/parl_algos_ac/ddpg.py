"""Deep Deterministic Policy Gradient (DDPG) and its hyperparameters, written once for paddle
and torch.

DDPG is also the skeleton of :class:`~parl_algos_ac.td3.TD3` and :class:`~parl_algos_ac.sac.SAC`:
one model with an actor and critics, a target copy of it, two optimizers, and a ``learn`` that
takes a critic step, then an actor step, then a soft target update. The subclasses change the
critic's target and the actor's loss.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from parl.core.config import AlgorithmConfig
from parl.core.neutral import Algorithm
from parl.core.ops import Tensor
from parl.core.transitions import Transitions, as_transitions

import numpy as np
from pydantic import Field, PositiveFloat

__all__ = ["DDPG", "DDPGConfig", "check_unit_actions"]


class DDPGConfig(AlgorithmConfig):
    """Hyperparameters of :class:`DDPG` (PARL's names; defaults of PARL's examples)."""

    gamma: float = Field(default=0.99, gt=0.0, le=1.0)
    """Discount factor of future rewards, in (0, 1]."""

    tau: float = Field(default=0.005, gt=0.0, le=1.0)
    """Rate of the soft target update ``target = (1 - tau)·target + tau·model``."""

    actor_lr: PositiveFloat = 1e-3
    """Learning rate of the actor's Adam optimizer."""

    critic_lr: PositiveFloat = 1e-3
    """Learning rate of the critic's Adam optimizer."""


def check_unit_actions(action: Any, where: str) -> None:
    """Refuse host (numpy, list) float actions outside ``[-1, 1]``; a tensor is not read back,
    which would wait for the device."""
    if not isinstance(action, (np.ndarray, list, tuple)):
        return
    array = np.asarray(action)
    if array.size and np.issubdtype(array.dtype, np.floating):
        low, high = float(array.min()), float(array.max())
        if low < -1.0 or high > 1.0:
            raise ValueError(
                f"{where}: actions must lie in [-1, 1], got values in [{low:.3g}, "
                f"{high:.3g}]; store the agent's actions before ActionMappingWrapper "
                "maps them onto the environment's bounds"
            )


def _stack_q(ops: Any, q: Any, batch: int, where: str) -> Tensor:
    """Bring what ``model.value`` returned to ``[num_critics, B]``.

    Accepted: one critic's ``[B]`` or ``[B, 1]``; a tuple or list of those (PARL's
    ``(Q1, Q2)``); an ensemble's ``[num_critics, B]``.
    """
    if isinstance(q, (tuple, list)):
        return ops.stack([_stack_q(ops, item, batch, where)[0] for item in q])
    shape = list(getattr(q, "shape", ()))
    if shape == [batch]:
        return q.unsqueeze(0)
    if shape == [batch, 1]:
        return q.reshape([1, batch])
    if len(shape) == 2 and shape[1] == batch:
        return q
    got = shape if hasattr(q, "shape") else type(q).__name__
    raise ValueError(
        f"{where}: model.value(obs, act) must return Q values [{batch}], [{batch}, 1], a tuple "
        f"of those or [num_critics, {batch}], got {got}"
    )


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

    It runs on the framework of its model (paddle or torch) and, on torch, on the model's
    device (``device=`` moves it).

    Args:
        model: the actor-critic model.
        gamma, tau, actor_lr, critic_lr: see :class:`DDPGConfig`; None keeps the config's value.
        config: a :class:`DDPGConfig` or a mapping of its fields.
        device: torch: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"`` to move the model to;
            None keeps it where it is.
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
    required_model_methods: ClassVar[tuple[str, ...]] = (
        "policy",
        "value",
        "get_actor_params",
        "get_critic_params",
    )

    def __init__(
        self,
        model: Any,
        gamma: float | None = None,
        tau: float | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        *,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        device: Any = None,
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
        self.target_model = self.ops.make_target(model)
        actor_params = list(model.get_actor_params())
        critic_params = list(model.get_critic_params())
        self.actor_optimizer = self.ops.adam(actor_params, lr=self.config.actor_lr)
        self.critic_optimizer = self.ops.adam(critic_params, lr=self.config.critic_lr)
        # The critic's own parameters, which an actor loss needs no gradient of (a parameter
        # the actor shares with the critic keeps its gradient).
        actor_ids = {id(param) for param in actor_params}
        self._critic_only = [p for p in critic_params if id(p) not in actor_ids]
        if device is not None:
            self.to(device)

    # -- acting ---------------------------------------------------------------------------

    def predict(self, obs: Any) -> Tensor:
        """Return the deterministic action ``mu(obs)`` (no gradients); one obs or a batch."""
        with self.ops.no_grad():
            return self.model.policy(self._obs(obs))

    # -- learning -------------------------------------------------------------------------

    def learn(
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any
    ) -> tuple[Tensor, Tensor]:
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
        batch = self._transitions(obs, action, reward, next_obs, terminal)
        critic_loss = self._learn_critic(batch.obs, batch.action, self._target(batch))
        actor_loss = self._minimize(self.actor_optimizer, self._actor_loss(batch.obs))
        self.sync_target()
        return critic_loss, actor_loss

    def sync_target(self, decay: float | None = None) -> None:
        """Soft-update the target model: ``target = decay·target + (1 - decay)·model``.

        Args:
            decay: None uses ``1 - tau`` (PARL's default); 0 makes a hard copy.
        """
        decay = 1.0 - self.config.tau if decay is None else decay
        self.ops.update_target(self.model, self.target_model, decay)

    def _target(self, batch: Transitions) -> Tensor:
        """The critic's regression target ``y = r + gamma·(1 - terminal)·min_k Q_target_k(s',
        a')`` ``[B]``, without gradients."""
        with self.ops.no_grad():
            next_action = self._next_action(batch.next_obs)
            next_q = self.ops.min(self._q(self.target_model, batch.next_obs, next_action), axis=0)
            return batch.reward + self.config.gamma * (1.0 - batch.terminal) * next_q

    def _next_action(self, next_obs: Tensor) -> Tensor:
        """The action the target is evaluated at: ``mu_target(s')``."""
        return self._call(self.target_model.policy, next_obs)

    def _learn_critic(self, obs: Tensor, action: Tensor, target: Tensor) -> Tensor:
        """One step on the sum over critics of ``mean((Q_k(s, a) - y)²)``."""
        q = self._q(self.model, obs, action)
        critic_loss = self.ops.sum(self.ops.mean((q - target).square(), axis=1))
        return self._minimize(self.critic_optimizer, critic_loss)

    def _actor_loss(self, obs: Tensor) -> Tensor:
        """``-mean Q_1(s, mu(s))``: the first critic judges the actor (TD3's choice too).

        A model with PARL's ``Q1(obs, act)`` method is asked for that critic alone.
        """
        action = self._call(self.model.policy, obs)
        return -self.ops.mean(self._q_for_actor(obs, action, first_only=True)[0])

    def _q_for_actor(self, obs: Tensor, action: Tensor, first_only: bool = False) -> Tensor:
        """:meth:`_q` of the model for an actor loss: the backward pass reaches the action
        through the critics but computes no gradients of the critics' own weights (the actor's
        optimizer would not use them; skipping them saves a weight-gradient matmul per layer).
        ``first_only`` uses the model's ``Q1`` where it has one (``[1, B]``).
        """
        with self.ops.no_grad_of(self._critic_only):
            q1 = getattr(self.model, "Q1", None) if first_only else None
            if q1 is not None:
                return _stack_q(self.ops, self._call(q1, obs, action), obs.shape[0], "model.Q1")
            return self._q(self.model, obs, action)

    def _minimize(self, optimizer: Any, loss: Tensor) -> Tensor:
        """One step of ``optimizer`` on ``loss``; returns the loss, detached."""
        self.ops.step(optimizer, loss)
        return loss.detach()

    def _q(self, model: Any, obs: Tensor, action: Tensor) -> Tensor:
        """Every critic's Q values, ``[num_critics, B]``."""
        q = self._call(model.value, obs, action)
        return _stack_q(self.ops, q, obs.shape[0], f"{type(self).__name__}.learn")

    def _call(self, method: Any, obs: Tensor, *rest: Tensor) -> Any:
        """Call a model method; a shape error names the inputs the model could not take."""
        try:
            return method(obs, *rest)
        except (ValueError, RuntimeError) as exc:
            given = " with actions " + str(list(rest[0].shape)) if rest else ""
            raise ValueError(
                f"{type(self).__name__}: model.{method.__name__} could not take observations "
                f"{list(obs.shape)}{given}; feed [batch, obs_dim] (and [batch, act_dim]) with "
                f"the dimensions the model was built for ({exc})"
            ) from exc

    def _obs(self, obs: Any) -> Tensor:
        """Observations as a float32 tensor on the algorithm's device."""
        return self.ops.to_tensor(obs, "float32", self.device)

    def _transitions(
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any
    ) -> Transitions:
        """Convert and check a batch; host actions outside ``[-1, 1]`` are refused."""
        check_unit_actions(action, f"{type(self).__name__}.learn")
        return as_transitions(self, obs, action, reward, next_obs, terminal, continuous=True)
