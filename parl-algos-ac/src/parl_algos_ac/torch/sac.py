"""Soft Actor-Critic on torch: the update of :mod:`parl_algos_ac.sac`, with torch's ops."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from parl.core.torch import Algorithm, Model
from parl.core.torch.batch import (
    BatchLike,
    as_batch_continuous_actions,
    as_batch_obs,
    as_batch_vector,
    to_tensor,
)
from parl.core.torch.distributions import TanhGaussian
from parl.core.torch.target import make_target, update_target

import torch

from parl_algos_ac.config import SACConfig, check_unit_actions, q_shape_message

__all__ = ["SAC", "SACConfig"]

_Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def _stack_q(q: Any, batch: int, where: str) -> torch.Tensor:
    """Bring what ``model.value`` returned to ``[num_critics, B]`` (the paddle class's rule)."""
    if isinstance(q, (tuple, list)):
        return torch.stack([_stack_q(item, batch, where)[0] for item in q])
    if isinstance(q, torch.Tensor):
        if q.ndim == 1 and q.shape[0] == batch:
            return q.unsqueeze(0)
        if q.ndim == 2 and q.shape[0] == batch and q.shape[1] == 1:
            return q.reshape(1, batch)
        if q.ndim == 2 and q.shape[1] == batch:
            return q
    got = list(q.shape) if isinstance(q, torch.Tensor) else type(q).__name__
    raise ValueError(q_shape_message(where, batch, got))


def _minimize(optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> torch.Tensor:
    """One step of ``optimizer`` on ``loss``; returns the loss, detached."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.detach()


class SAC(Algorithm):
    """Soft Actor-Critic, SAC (Haarnoja, Zhou, Abbeel and Levine, ICML 2018), on torch, with
    automatic entropy tuning (Haarnoja et al., "Soft Actor-Critic Algorithms and Applications").

    Paper: "Soft Actor-Critic: Off-Policy Maximum Entropy Deep Reinforcement Learning with a
    Stochastic Actor", arXiv:1801.01290.

    The paddle class's algorithm (:class:`parl_algos_ac.sac.SAC`, see it for the losses),
    config (:class:`~parl_algos_ac.config.SACConfig`), constructor and ``learn`` returns: a
    critic step on ``sum_k mean((Q_k(s, a) - y)²)`` with
    ``y = r + gamma·(1 - terminal)·(min_k Q_target_k(s', a') - alpha·log pi(a'|s'))``, an actor
    step on ``mean(alpha·log pi(a~|s) - min_k Q_k(s, a~))`` (reparameterised, no critic weight
    gradients), an α step with ``alpha="auto"``, then a soft target update by ``tau``.
    ``log_alpha`` and its optimizer are saved in checkpoints. Inputs may be numpy arrays or
    tensors on any device; they are moved to :attr:`device`.

    Model contract: ``policy(obs)`` → ``(mean, log_std)`` of the pre-squash Gaussian;
    ``value(obs, act)`` → the critics' Q values (``(Q1, Q2)`` or ``[2, B]``);
    ``get_actor_params()``, ``get_critic_params()``.

    Examples:
        >>> from parl_algos_ac.torch import SAC, GaussianActorCritic
        >>> alg = SAC(GaussianActorCritic(3, 1), alpha="auto")
        >>> round(float(alg.alpha), 3)
        1.0
    """

    Config: ClassVar[type[SACConfig]] = SACConfig
    config: SACConfig
    target_model: Model
    checkpoint_state: ClassVar[tuple[str, ...]] = ("log_alpha",)
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
        alpha: float | Literal["auto"] | None = None,
        actor_lr: float | None = None,
        critic_lr: float | None = None,
        *,
        config: SACConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("SAC needs a parl.Model with policy() and value(), got None")
        super().__init__(
            model,
            config=config,
            gamma=gamma,
            tau=tau,
            alpha=alpha,
            actor_lr=actor_lr,
            critic_lr=critic_lr,
            **options,
        )
        cfg = self.config
        self.target_model = make_target(model)
        # Any: mypy reads a method of an nn.Module subclass as Module.__getattr__'s Tensor.
        contract: Any = model
        actor_params = list(contract.get_actor_params())
        critic_params = list(contract.get_critic_params())
        self.actor_optimizer = torch.optim.Adam(actor_params, lr=cfg.actor_lr)
        self.critic_optimizer = torch.optim.Adam(critic_params, lr=cfg.critic_lr)
        # The critic's own parameters, which an actor loss needs no gradient of.
        actor_ids = {id(param) for param in actor_params}
        self._critic_only = [p for p in critic_params if id(p) not in actor_ids]
        auto = cfg.alpha == "auto"
        start = cfg.initial_alpha if auto else float(cfg.alpha)
        self.log_alpha = torch.tensor(math.log(start), requires_grad=auto)
        self.alpha_optimizer = (
            torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr or cfg.actor_lr) if auto else None
        )
        self.alpha_loss: torch.Tensor | None = None

    @property
    def alpha(self) -> torch.Tensor:
        """The current temperature ``exp(log_alpha)`` (a 0-d tensor, no gradient)."""
        return self.log_alpha.detach().exp()

    # -- acting ---------------------------------------------------------------------------

    def _distribution(self, obs: torch.Tensor) -> TanhGaussian:
        out = self._call(self.model.policy, obs)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(
                f"{type(self).__name__}: model.policy must return (mean, log_std), got "
                f"{type(out).__name__}"
            )
        return TanhGaussian.from_log_std(*out)

    def _obs(self, obs: BatchLike) -> torch.Tensor:
        return to_tensor(obs, "float32").to(self.device)

    def predict(self, obs: BatchLike) -> torch.Tensor:
        """Return the greedy action ``tanh(mean)`` (no gradients); one obs or a batch."""
        with torch.no_grad():
            return self._distribution(self._obs(obs)).mode()

    def sample(self, obs: BatchLike) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(action, log_prob)`` drawn from the policy (no gradients), as PARL's SAC."""
        with torch.no_grad():
            return self._distribution(self._obs(obs)).rsample_with_log_prob()

    # -- learning -------------------------------------------------------------------------

    def learn(
        self,
        obs: BatchLike,
        action: BatchLike,
        reward: BatchLike,
        next_obs: BatchLike,
        terminal: BatchLike,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A critic step, an actor step, an α step (``alpha="auto"``), a soft target update.

        Arguments and shapes as the paddle class's (actions ``[B, act_dim]`` in ``[-1, 1]``,
        ``terminal`` 1 only where the episode terminated).

        Returns:
            ``(critic_loss, actor_loss)`` as scalar tensors, as PARL's SAC.
        """
        obs, action, reward, next_obs, terminal = self._check_batch(
            obs, action, reward, next_obs, terminal
        )
        alpha = self.alpha
        pi_action, pi_log_prob = self._distribution(obs).rsample_with_log_prob()
        with torch.no_grad():
            next_action, next_log_prob = self._distribution(next_obs).rsample_with_log_prob()
            next_q = self._q(self.target_model, next_obs, next_action).min(dim=0).values
            soft_next = next_q - alpha * next_log_prob
            target = reward + self.config.gamma * (1.0 - terminal) * soft_next
        q = self._q(self.model, obs, action)
        critic_loss = _minimize(self.critic_optimizer, (q - target).square().mean(dim=1).sum())

        q_pi = self._q_for_actor(obs, pi_action).min(dim=0).values
        actor_loss = _minimize(self.actor_optimizer, (alpha * pi_log_prob - q_pi).mean())
        if self.alpha_optimizer is not None:
            self._learn_alpha(pi_log_prob.detach(), action.shape[1])
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

    def _learn_alpha(self, log_prob: torch.Tensor, act_dim: int) -> None:
        assert self.alpha_optimizer is not None
        target_entropy = self.config.target_entropy
        if target_entropy is None:
            target_entropy = -float(act_dim)
        alpha_loss = -(self.log_alpha * (log_prob + target_entropy)).mean()
        self.alpha_loss = _minimize(self.alpha_optimizer, alpha_loss)

    def _q_for_actor(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """:meth:`_q` of the model, computing no gradients of the critics' own weights."""
        flags = [param.requires_grad for param in self._critic_only]
        for param in self._critic_only:
            param.requires_grad_(False)
        try:
            return self._q(self.model, obs, action)
        finally:
            for param, flag in zip(self._critic_only, flags, strict=True):
                param.requires_grad_(flag)

    def _q(self, model: Model, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Every critic's Q values, ``[num_critics, B]``."""
        q = self._call(model.value, obs, action)
        return _stack_q(q, obs.shape[0], f"{type(self).__name__}.learn")

    def _call(self, method: Any, obs: torch.Tensor, *rest: torch.Tensor) -> Any:
        """Call a model method; a shape error names the inputs the model could not take."""
        try:
            return method(obs, *rest)
        except RuntimeError as exc:
            given = " with actions " + str(list(rest[0].shape)) if rest else ""
            raise ValueError(
                f"{type(self).__name__}: model.{method.__name__} could not take observations "
                f"{list(obs.shape)}{given}; feed [batch, obs_dim] (and [batch, act_dim]) with "
                f"the dimensions the model was built for ({exc})"
            ) from exc

    def _check_batch(
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any
    ) -> _Batch:
        """Convert and check a batch (numpy actions outside ``[-1, 1]`` are refused), then move
        it to the device."""
        where = f"{type(self).__name__}.learn"
        obs = as_batch_obs(obs, where)
        next_obs = as_batch_obs(next_obs, where, "next_obs")
        if list(obs.shape) != list(next_obs.shape):
            raise ValueError(
                f"{where} needs obs and next_obs of the same shape [batch, obs_dim], got "
                f"{list(obs.shape)} and {list(next_obs.shape)}"
            )
        if not isinstance(action, torch.Tensor):
            check_unit_actions(action, where)
        batch = obs.shape[0]
        hint = f"{type(self).__name__} learns continuous actions [B, act_dim] in [-1, 1]"
        tensors = (
            obs,
            as_batch_continuous_actions(action, batch, where, hint),
            as_batch_vector(reward, batch, "reward", where),
            next_obs,
            as_batch_vector(terminal, batch, "terminal", where),
        )
        obs, action, reward, next_obs, terminal = (t.to(self.device) for t in tensors)
        return obs, action, reward, next_obs, terminal
