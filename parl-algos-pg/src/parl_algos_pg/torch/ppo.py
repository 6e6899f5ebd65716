"""Proximal Policy Optimization on torch: the update of :mod:`parl_algos_pg.ppo`, torch's ops."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parl.core.config import UNSET
from parl.core.torch import Algorithm, Model
from parl.core.torch.batch import (
    as_batch_actions,
    as_batch_continuous_actions,
    as_batch_obs,
    as_batch_vector,
    check_action_range,
    is_integer,
    to_tensor,
)
from parl.core.torch.distributions import Categorical, DiagGaussian, Distribution
from parl.core.torch.optim import clip_grad_norm_
from parl.core.validation import positive_int

import numpy as np
import torch

from parl_algos_pg.ppo_config import (
    ADV_EPS,
    CONTINUOUS_HINT,
    DISCRETE_HINT,
    PPOConfig,
    PPOStats,
    batch_shape_message,
    check_lr,
    check_minibatches,
    fractional_action_message,
    not_logits_message,
    not_mean_std_message,
    std_mismatch_message,
    value_shape_message,
    width_mismatch_message,
)

__all__ = ["PPO", "PPOConfig", "PPOStats"]

# obs, action, old value, return, old log-prob, advantage
_Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def _whole_number_actions(
    action: Any, batch: int, where: str, hint: str = "cast them, e.g. action.astype('int64')"
) -> torch.Tensor:
    """Int64 ``[B]`` discrete actions, also from floats that hold whole numbers (as paddle's)."""
    shape = list(action.shape) if isinstance(action, torch.Tensor) else list(np.shape(action))
    one_per_row = len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)
    if one_per_row and not is_integer(action) and _is_float(action):
        values = action if isinstance(action, torch.Tensor) else to_tensor(action, "float64")
        fractional = (values != values.round()) | ~torch.isfinite(values)
        if bool(fractional.any()):
            bad = values.flatten()[fractional.flatten().nonzero()[0, 0]].item()
            raise ValueError(fractional_action_message(where, bad, hint))
        action = values.long()
    return as_batch_actions(action, batch, where, hint)


def _is_float(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.is_floating_point()
    return bool(np.issubdtype(np.asarray(value).dtype, np.floating))


class _DiscreteActions:
    """A categorical policy: ``policy(obs)`` returns logits, actions are int64 indices."""

    convert = staticmethod(_whole_number_actions)
    hint = DISCRETE_HINT

    def distribution(self, out: Any, where: str) -> Categorical:
        if isinstance(out, (tuple, list)):
            raise TypeError(not_logits_message(where, out))
        return Categorical(out)

    def width(self, dist: Distribution) -> int:
        assert isinstance(dist, Categorical)
        return int(dist.logits.shape[-1])

    def check_fits(self, width: int, given: Any, action: torch.Tensor, where: str) -> None:
        check_action_range(action if isinstance(given, torch.Tensor) else given, width, where)


class _ContinuousActions:
    """A diagonal Gaussian policy: ``policy(obs)`` returns ``(mean, std)``, std broadcasting."""

    convert = staticmethod(as_batch_continuous_actions)
    hint = CONTINUOUS_HINT

    def distribution(self, out: Any, where: str) -> DiagGaussian:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(not_mean_std_message(where, out))
        mean, std = out
        try:
            return DiagGaussian(mean, std)
        except ValueError as exc:
            raise ValueError(std_mismatch_message(where, mean.shape, std.shape)) from exc

    def width(self, dist: Distribution) -> int:
        assert isinstance(dist, DiagGaussian)
        return int(dist.mean.shape[-1])

    def check_fits(self, width: int, given: Any, action: torch.Tensor, where: str) -> None:
        if action.shape[1] != width:
            raise ValueError(width_mismatch_message(where, action.shape[1], width))


def _squeeze_value(value: torch.Tensor) -> torch.Tensor:
    """``[B, 1]`` values to ``[B]``; anything else as the model returned it."""
    return value.squeeze(-1) if value.ndim >= 2 and value.shape[-1] == 1 else value


class PPO(Algorithm):
    """Proximal Policy Optimization with a clipped surrogate objective (Schulman et al., 2017), on
    torch.

    Paper: "Proximal Policy Optimization Algorithms", arXiv:1707.06347.

    The paddle class's algorithm (:class:`parl_algos_pg.ppo.PPO`, see it for the losses and the
    model contract), config (:class:`~parl_algos_pg.ppo_config.PPOConfig`), constructor,
    ``learn`` / ``learn_epochs`` returns and :class:`~parl_algos_pg.ppo_config.PPOStats`: one
    Adam over the model's parameters, gradients clipped by their global norm, advantages
    normalised per minibatch. Inputs may be numpy arrays or tensors on any device; they are
    moved to :attr:`device` (``PPOAgent(..., device="cuda")`` moves the model).

    Args:
        model: a ``parl.core.torch.Model`` with ``policy(obs)`` and ``value(obs)``.
        config: a :class:`PPOConfig` or a mapping of its fields.
        **options: further config fields (an unknown name is a ``ValidationError``).

    Examples:
        >>> from parl_algos_pg.torch import DiscretePPOModel
        >>> alg = PPO(DiscretePPOModel(4, 2), clip_param=0.2, initial_lr=2.5e-4)
        >>> alg.config.clip_param
        0.2
    """

    Config = PPOConfig
    required_model_methods = ("policy", "value")
    config: PPOConfig
    # The base class's Any: typed as Model, mypy reads model.policy as nn.Module's __getattr__.

    def __init__(
        self,
        model: Model,
        clip_param: float | None = None,
        value_loss_coef: float | None = None,
        entropy_coef: float | None = None,
        initial_lr: float | None = None,
        eps: float | None = None,
        max_grad_norm: float | None = UNSET,
        use_clipped_value_loss: bool | None = None,
        norm_adv: bool | None = None,
        continuous_action: bool | None = None,
        *,
        config: PPOConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("PPO needs a model with policy() and value(): PPO(model, ...)")
        super().__init__(
            model,
            config=config,
            clip_param=clip_param,
            value_loss_coef=value_loss_coef,
            entropy_coef=entropy_coef,
            initial_lr=initial_lr,
            eps=eps,
            max_grad_norm=max_grad_norm,
            use_clipped_value_loss=use_clipped_value_loss,
            norm_adv=norm_adv,
            continuous_action=continuous_action,
            **options,
        )
        self._actions: _DiscreteActions | _ContinuousActions = (
            _ContinuousActions() if self.config.continuous_action else _DiscreteActions()
        )
        self._action_width: int | None = None
        self._parameters = list(self.model.parameters())
        self.optimizer = torch.optim.Adam(
            self._parameters, lr=self.config.initial_lr, eps=self.config.eps
        )

    def _distribution(self, obs: torch.Tensor, where: str, batch: int | None = None) -> Any:
        dist = self._actions.distribution(self.model.policy(obs), where)
        if batch is not None and list(dist.batch_shape) != [batch]:
            raise ValueError(batch_shape_message(where, dist.batch_shape, batch))
        return dist

    def _value(self, obs: torch.Tensor, where: str) -> torch.Tensor:
        value = _squeeze_value(self.model.value(obs))
        if value.ndim != 1 or value.shape[0] != obs.shape[0]:
            raise ValueError(value_shape_message(where, value.shape, obs.shape[0]))
        return value

    def _obs(self, obs: Any) -> torch.Tensor:
        return to_tensor(obs, "float32").to(self.device)

    # -- acting ---------------------------------------------------------------------------

    def sample(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Draw exploratory actions (no gradients); returns as the paddle class's
        ``(value, action [1, B, ...], action_log_probs [1, B], action_entropy)``."""
        obs = self._obs(obs)
        with torch.no_grad():
            value = _squeeze_value(self.model.value(obs))
            dist = self._distribution(obs, "PPO.sample")
            action = dist.sample()
            logp = dist.log_prob(action)
            return value, action.unsqueeze(0), logp.unsqueeze(0), dist.entropy()

    def predict(self, obs: Any) -> torch.Tensor:
        """Return greedy actions: the argmax (discrete) or the mean (continuous)."""
        with torch.no_grad():
            mode: torch.Tensor = self._distribution(self._obs(obs), "PPO.predict").mode()
            return mode

    def value(self, obs: Any) -> torch.Tensor:
        """Return state values ``[B]`` of a batch (no gradients); ``[B, 1]`` is squeezed."""
        with torch.no_grad():
            return _squeeze_value(self.model.value(self._obs(obs)))

    # -- learning -------------------------------------------------------------------------

    def _step(
        self,
        obs: torch.Tensor,
        action: torch.Tensor,
        old_value: torch.Tensor,
        returns: torch.Tensor,
        old_logp: torch.Tensor,
        adv: torch.Tensor,
        where: str,
    ) -> torch.Tensor:
        """One gradient step; ``[value_loss, action_loss, entropy, approx_kl, clip_fraction]``."""
        cfg = self.config
        value = self._value(obs, where)
        dist = self._distribution(obs, where, obs.shape[0])
        logp, entropy = dist.log_prob(action), dist.entropy()
        if cfg.norm_adv and adv.shape[0] > 1:
            centered = adv - adv.mean()
            std = (centered.square().sum() / (adv.shape[0] - 1)).sqrt()
            adv = centered / (std + ADV_EPS)
        log_ratio = logp - old_logp
        ratio = torch.exp(log_ratio)
        surr1 = ratio * adv
        surr2 = torch.clamp(ratio, 1.0 - cfg.clip_param, 1.0 + cfg.clip_param) * adv
        action_loss = -torch.minimum(surr1, surr2).mean()
        if cfg.use_clipped_value_loss:
            value_clipped = old_value + torch.clamp(
                value - old_value, -cfg.clip_param, cfg.clip_param
            )
            value_loss = (
                0.5
                * torch.maximum(
                    (value - returns).square(), (value_clipped - returns).square()
                ).mean()
            )
        else:
            value_loss = 0.5 * (value - returns).square().mean()
        entropy_loss = entropy.mean()
        loss = cfg.value_loss_coef * value_loss + action_loss - cfg.entropy_coef * entropy_loss
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.max_grad_norm is not None:
            clip_grad_norm_(self._parameters, cfg.max_grad_norm)
        self.optimizer.step()
        with torch.no_grad():
            approx_kl = ((ratio - 1.0) - log_ratio).mean()
            clip_fraction = ((ratio - 1.0).abs() > cfg.clip_param).float().mean()
            stats = [value_loss.detach(), action_loss.detach(), entropy_loss.detach()]
            return torch.stack([*stats, approx_kl, clip_fraction])

    def _prepare(
        self,
        batch_obs: Any,
        batch_action: Any,
        batch_value: Any,
        batch_return: Any,
        batch_logprob: Any,
        batch_adv: Any,
        where: str,
    ) -> _Batch:
        obs = as_batch_obs(batch_obs, where)
        batch = obs.shape[0]
        action = self._actions.convert(batch_action, batch, where, self._actions.hint)
        obs = obs.to(self.device)
        if self._action_width is None:
            with torch.no_grad():
                self._action_width = self._actions.width(self._distribution(obs[:1], where, 1))
        given = batch_action if isinstance(batch_action, torch.Tensor) else np.asarray(batch_action)
        self._actions.check_fits(self._action_width, given, action, where)
        rest = (
            as_batch_vector(batch_value, batch, "batch_value", where),
            as_batch_vector(batch_return, batch, "batch_return", where),
            as_batch_vector(batch_logprob, batch, "batch_logprob", where),
            as_batch_vector(batch_adv, batch, "batch_adv", where),
        )
        value, returns, logp, adv = (t.to(self.device) for t in rest)
        return obs, action.to(self.device), value, returns, logp, adv

    def _set_lr(self, lr: float | None) -> None:
        """PARL's ``if lr: set_lr(lr)``: ``None`` and ``0`` keep the current rate."""
        rate = check_lr(lr)
        if rate is not None:
            for group in self.optimizer.param_groups:
                group["lr"] = rate

    def learn(
        self,
        batch_obs: Any,
        batch_action: Any,
        batch_value: Any,
        batch_return: Any,
        batch_logprob: Any,
        batch_adv: Any,
        lr: float | None = None,
    ) -> tuple[float, float, float]:
        """Take one gradient step on a minibatch (PARL's signature, the paddle class's rules).

        Returns:
            ``(value_loss, action_loss, entropy_loss)`` as floats.
        """
        where = "PPO.learn"
        self._set_lr(lr)
        tensors = self._prepare(
            batch_obs, batch_action, batch_value, batch_return, batch_logprob, batch_adv, where
        )
        value_loss, action_loss, entropy_loss = self._step(*tensors, where)[:3].tolist()
        return value_loss, action_loss, entropy_loss

    def learn_epochs(
        self,
        batch_obs: Any,
        batch_action: Any,
        batch_value: Any,
        batch_return: Any,
        batch_logprob: Any,
        batch_adv: Any,
        epochs: int,
        num_minibatches: int,
        lr: float | None = None,
        rng: np.random.Generator | None = None,
    ) -> PPOStats:
        """Run ``epochs`` passes over a rollout, each shuffled into ``num_minibatches`` steps
        (the paddle class's :meth:`~parl_algos_pg.ppo.PPO.learn_epochs`, same shuffles for the
        same ``rng``).

        Returns:
            A :class:`PPOStats`.
        """
        where = "PPO.learn_epochs"
        epochs = positive_int("epochs", epochs)
        num_minibatches = positive_int("num_minibatches", num_minibatches)
        self._set_lr(lr)
        tensors = self._prepare(
            batch_obs, batch_action, batch_value, batch_return, batch_logprob, batch_adv, where
        )
        check_minibatches(tensors[0].shape[0], num_minibatches, where)
        explained = _explained_variance(tensors[2], tensors[3])
        rng = rng if rng is not None else np.random.default_rng()
        steps: list[torch.Tensor] = []
        epochs_run = 0
        for _ in range(epochs):
            epoch = self._epoch(tensors, num_minibatches, rng, where)
            steps += epoch
            epochs_run += 1
            target_kl = self.config.target_kl
            if target_kl is not None and float(torch.stack(epoch)[:, 3].mean()) > target_kl:
                break
        means = torch.stack(steps).mean(0)
        value_loss, action_loss, entropy, approx_kl, clip_fraction, explained_variance = torch.cat(
            [means, explained.reshape(1)]
        ).tolist()
        return PPOStats(
            value_loss,
            action_loss,
            entropy,
            approx_kl,
            clip_fraction,
            explained_variance,
            epochs_run,
        )

    def _epoch(
        self, tensors: _Batch, num_minibatches: int, rng: np.random.Generator, where: str
    ) -> list[torch.Tensor]:
        """One shuffled pass over the rollout; the statistics of each gradient step."""
        if num_minibatches == 1:
            return [self._step(*tensors, where)]
        batch = tensors[0].shape[0]
        size = batch // num_minibatches
        order = torch.as_tensor(rng.permutation(batch), device=self.device)
        stats = []
        for start in range(0, batch, size):
            index = order[start : start + size]
            obs, action, value, returns, logp, adv = (t[index] for t in tensors)
            stats.append(self._step(obs, action, value, returns, logp, adv, where))
        return stats


def _explained_variance(values: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """``1 - Var(returns - values) / Var(returns)``; nan when the returns are constant."""
    values, returns = values.float(), returns.float()
    var_returns = (returns - returns.mean()).square().mean()
    residual = returns - values
    var_residual = (residual - residual.mean()).square().mean()
    nan = torch.full((), float("nan"), device=values.device)
    return torch.where(var_returns > 0, 1.0 - var_residual / var_returns, nan)
