"""Proximal Policy Optimization (``PPO``, clipped surrogate) and its hyperparameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parl.core.batch import (
    as_batch_actions,
    as_batch_continuous_actions,
    as_batch_obs,
    as_batch_vector,
    check_action_range,
    is_integer,
    to_tensor,
)
from parl.core.config import UNSET
from parl.core.distributions import Categorical, DiagGaussian, Distribution
from parl.core.optim import clip_grad_norm_
from parl.core.paddle import Algorithm, Model
from parl.core.validation import positive_int

import numpy as np
import paddle

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
_Batch = tuple[
    paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor
]


def _whole_number_actions(
    action: Any, batch: int, where: str, hint: str = "cast them, e.g. action.astype('int64')"
) -> paddle.Tensor:
    """Int64 ``[B]`` discrete actions, also from floats that hold whole numbers.

    PARL's Atari PPO stores actions in a float buffer and PARL cast them; a fractional value
    is a bug in the caller, so it is refused instead of being truncated.
    """
    shape = list(np.shape(action)) if not isinstance(action, paddle.Tensor) else action.shape
    one_per_row = len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)
    if one_per_row and not is_integer(action) and _is_float(action):
        values = action if isinstance(action, paddle.Tensor) else to_tensor(action, "float64")
        fractional = paddle.logical_or(values != values.round(), ~paddle.isfinite(values))
        if bool(fractional.any()):
            bad = values.flatten()[paddle.nonzero(fractional.flatten()).flatten()[0]].item()
            raise ValueError(fractional_action_message(where, bad, hint))
        action = values.astype("int64")
    return as_batch_actions(action, batch, where, hint)


def _is_float(value: Any) -> bool:
    if isinstance(value, paddle.Tensor):
        return value.is_floating_point()
    return bool(np.issubdtype(np.asarray(value).dtype, np.floating))


class _DiscreteActions:
    """A categorical policy: ``policy(obs)`` returns logits, actions are int64 indices."""

    def distribution(self, out: Any, where: str) -> Categorical:
        if isinstance(out, (tuple, list)):
            raise TypeError(not_logits_message(where, out))
        return Categorical(out)

    # learn() converts actions with this, adding the hint to a wrong-dtype error.
    convert = staticmethod(_whole_number_actions)
    hint = DISCRETE_HINT

    def width(self, dist: Distribution) -> int:
        """The number of actions of the model's policy."""
        assert isinstance(dist, Categorical)
        return dist.logits.shape[-1]

    def check_fits(self, width: int, given: Any, action: paddle.Tensor, where: str) -> None:
        # Numpy input is checked before it becomes a tensor: no host read of the tensor.
        check_action_range(action if isinstance(given, paddle.Tensor) else given, width, where)


class _ContinuousActions:
    """A diagonal Gaussian policy: ``policy(obs)`` returns ``(mean, std)``, std broadcasting."""

    def distribution(self, out: Any, where: str) -> DiagGaussian:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(not_mean_std_message(where, out))
        mean, std = out
        try:
            return DiagGaussian(mean, std)
        except ValueError as exc:
            raise ValueError(std_mismatch_message(where, mean.shape, std.shape)) from exc

    convert = staticmethod(as_batch_continuous_actions)
    hint = CONTINUOUS_HINT

    def width(self, dist: Distribution) -> int:
        """The action dimension of the model's policy."""
        assert isinstance(dist, DiagGaussian)
        return dist.mean.shape[-1]

    def check_fits(self, width: int, given: Any, action: paddle.Tensor, where: str) -> None:
        if action.shape[1] != width:
            raise ValueError(width_mismatch_message(where, action.shape[1], width))


def _squeeze_value(value: paddle.Tensor) -> paddle.Tensor:
    """``[B, 1]`` values to ``[B]``; anything else as the model returned it."""
    return value.squeeze(-1) if value.ndim >= 2 and value.shape[-1] == 1 else value


class PPO(Algorithm):
    """Proximal Policy Optimization with a clipped surrogate objective (Schulman et al., 2017).

    "Proximal Policy Optimization Algorithms", arXiv:1707.06347. One :meth:`learn` call is one
    gradient step on a minibatch::

        ratio  = exp(log π(a|s) - old_log_prob)
        L_clip = -mean(min(ratio · A, clip(ratio, 1 - ε, 1 + ε) · A))
        L_v    = 0.5 · mean(max((V - R)², (old_V + clip(V - old_V, -ε, ε) - R)²))
        loss   = value_loss_coef · L_v + L_clip - entropy_coef · H

    where ``A`` is normalised per minibatch when ``norm_adv`` (PARL's rules). Unlike PARL,
    which clipped each gradient tensor separately (``ClipGradByNorm``), gradients are clipped
    by their **global** norm (:func:`parl.core.optim.clip_grad_norm_`), as the PPO paper's code
    and CleanRL.

    Model contract (checked at construction):

    * ``value(obs)`` → state values ``[B]`` or ``[B, 1]``;
    * ``policy(obs)`` → logits ``[B, n_actions]`` when ``continuous_action=False``;
      ``(mean, std)`` when ``continuous_action=True``, the mean ``[B, act_dim]`` and the
      standard deviation (not its log, as in PARL) of that shape or broadcastable to it, such
      as ``exp(log_std)`` of a state-independent ``[1, act_dim]`` parameter.

    The policy becomes a :class:`~parl.core.distributions.Categorical` or
    :class:`~parl.core.distributions.DiagGaussian` (log-probabilities from ``log_softmax``;
    Gaussian ones summed over action dimensions). Advantages and returns (e.g. GAE from
    ``parl.utils.compute_gae``) are computed by the caller. ``predict``, ``sample`` and
    ``value`` give the observation to the model as it is, so one unbatched observation works
    as in PARL 2.x; ``learn`` checks that every input has one entry per observation.

    The positional hyperparameters after ``model`` (``clip_param`` … ``continuous_action``)
    are the fields of :class:`PPOConfig`, in PARL's order; ``None`` keeps the config's value,
    except for ``max_grad_norm``, where ``None`` switches clipping off.

    Args:
        model: the actor-critic model.
        config: a :class:`PPOConfig` or a mapping of its fields.
        **options: further config fields (an unknown name is a ``ValidationError``).

    Examples:
        >>> import paddle
        >>> import parl
        >>> class ActorCritic(parl.Model):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.pi, self.v = paddle.nn.Linear(4, 2), paddle.nn.Linear(4, 1)
        ...     def policy(self, obs):
        ...         return self.pi(obs)
        ...     def value(self, obs):
        ...         return self.v(obs)
        >>> PPO = parl.algorithms.get("PPO")
        >>> alg = PPO(ActorCritic(), clip_param=0.2, initial_lr=2.5e-4)
    """

    Config = PPOConfig
    required_model_methods = ("policy", "value")
    config: PPOConfig
    model: Model

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
        self._actions = (
            _ContinuousActions() if self.config.continuous_action else _DiscreteActions()
        )
        self._action_width: int | None = None
        # Walking the layer tree for its parameters costs more than a small layer's matmul.
        self._parameters = self.model.parameters()
        self.optimizer = paddle.optimizer.Adam(
            learning_rate=self.config.initial_lr,
            epsilon=self.config.eps,
            parameters=self._parameters,
            use_multi_tensor=True,
        )

    def _distribution(self, obs: paddle.Tensor, where: str, batch: int | None = None) -> Any:
        dist = self._actions.distribution(self.model.policy(obs), where)
        if batch is not None and list(dist.batch_shape) != [batch]:
            raise ValueError(batch_shape_message(where, dist.batch_shape, batch))
        return dist

    def _value(self, obs: paddle.Tensor, where: str) -> paddle.Tensor:
        value = _squeeze_value(self.model.value(obs))
        if value.ndim != 1 or value.shape[0] != obs.shape[0]:
            raise ValueError(value_shape_message(where, value.shape, obs.shape[0]))
        return value

    # -- acting ---------------------------------------------------------------------------

    def sample(
        self, obs: paddle.Tensor
    ) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """Draw exploratory actions (no gradients); one observation or a batch ``[B, ...]``.

        Returns:
            ``(value, action, action_log_probs, action_entropy)``: values ``[B]``; actions
            ``[1, B]`` int64 (discrete) or ``[1, B, act_dim]`` float32 (continuous) and their
            log-probabilities ``[1, B]``, with PARL 2.x's leading axis of one draw
            (``dist.sample([1])``; PARL's agents take ``[0]``); the policy entropies ``[B]``.
            For one observation the ``B`` axis is absent (values keep the model's shape).
        """
        obs = to_tensor(obs, "float32")
        with paddle.no_grad():
            value = _squeeze_value(self.model.value(obs))
            dist = self._distribution(obs, "PPO.sample")
            action = dist.sample()
            logp = dist.log_prob(action)
            return value, action.unsqueeze(0), logp.unsqueeze(0), dist.entropy()

    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Return greedy actions: the argmax (discrete) or the mean (continuous)."""
        with paddle.no_grad():
            return self._distribution(to_tensor(obs, "float32"), "PPO.predict").mode()

    def value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Return state values ``[B]`` of a batch (no gradients); ``[B, 1]`` is squeezed."""
        with paddle.no_grad():
            return _squeeze_value(self.model.value(to_tensor(obs, "float32")))

    # -- learning -------------------------------------------------------------------------

    def _step(
        self,
        obs: paddle.Tensor,
        action: paddle.Tensor,
        old_value: paddle.Tensor,
        returns: paddle.Tensor,
        old_logp: paddle.Tensor,
        adv: paddle.Tensor,
        where: str,
    ) -> paddle.Tensor:
        """One gradient step on prepared tensors.

        Returns:
            ``[value_loss, action_loss, entropy, approx_kl, clip_fraction]`` (no gradients).
        """
        cfg = self.config
        value = self._value(obs, where)
        dist = self._distribution(obs, where, obs.shape[0])
        logp, entropy = dist.log_prob(action), dist.entropy()
        if cfg.norm_adv and adv.shape[0] > 1:
            # Unbiased std written out: paddle.std promotes dtypes internally and warns.
            centered = adv - adv.mean()
            std = (centered.square().sum() / (adv.shape[0] - 1)).sqrt()
            adv = centered / (std + ADV_EPS)
        log_ratio = logp - old_logp
        ratio = paddle.exp(log_ratio)
        surr1 = ratio * adv
        surr2 = paddle.clip(ratio, 1.0 - cfg.clip_param, 1.0 + cfg.clip_param) * adv
        action_loss = -paddle.minimum(surr1, surr2).mean()
        if cfg.use_clipped_value_loss:
            value_clipped = old_value + paddle.clip(
                value - old_value, -cfg.clip_param, cfg.clip_param
            )
            value_loss = (
                0.5
                * paddle.maximum(
                    (value - returns).square(), (value_clipped - returns).square()
                ).mean()
            )
        else:
            value_loss = 0.5 * (value - returns).square().mean()
        entropy_loss = entropy.mean()
        loss = cfg.value_loss_coef * value_loss + action_loss - cfg.entropy_coef * entropy_loss
        self.optimizer.clear_grad()
        loss.backward()
        if cfg.max_grad_norm is not None:
            clip_grad_norm_(self._parameters, cfg.max_grad_norm)
        self.optimizer.step()
        with paddle.no_grad():
            approx_kl = ((ratio - 1.0) - log_ratio).mean()
            clip_fraction = ((ratio - 1.0).abs() > cfg.clip_param).astype("float32").mean()
        stats = [value_loss.detach(), action_loss.detach(), entropy_loss.detach()]
        return paddle.stack([*stats, approx_kl, clip_fraction])

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
        if self._action_width is None:
            # One tiny forward, once: the width of the policy's output does not change.
            with paddle.no_grad():
                self._action_width = self._actions.width(self._distribution(obs[:1], where, 1))
        given = (
            batch_action if isinstance(batch_action, paddle.Tensor) else np.asarray(batch_action)
        )
        self._actions.check_fits(self._action_width, given, action, where)
        return (
            obs,
            action,
            as_batch_vector(batch_value, batch, "batch_value", where),
            as_batch_vector(batch_return, batch, "batch_return", where),
            as_batch_vector(batch_logprob, batch, "batch_logprob", where),
            as_batch_vector(batch_adv, batch, "batch_adv", where),
        )

    def _set_lr(self, lr: float | None) -> None:
        """PARL's ``if lr: set_lr(lr)``: ``None`` and ``0`` keep the current rate."""
        rate = check_lr(lr)
        if rate is not None:
            self.optimizer.set_lr(rate)

    def learn(
        self,
        batch_obs: paddle.Tensor,
        batch_action: paddle.Tensor,
        batch_value: paddle.Tensor,
        batch_return: paddle.Tensor,
        batch_logprob: paddle.Tensor,
        batch_adv: paddle.Tensor,
        lr: float | None = None,
    ) -> tuple[float, float, float]:
        """Take one gradient step on a minibatch (PARL's signature).

        Args:
            batch_obs: observations ``[B, ...]``.
            batch_action: the actions taken: ints ``[B]`` (floats holding whole numbers are
                accepted, as PARL's Atari PPO passes them) or float ``[B, act_dim]``.
            batch_value: the values predicted when acting ``[B]``.
            batch_return: value targets ``[B]`` (advantages + values).
            batch_logprob: log-probabilities of the actions when acting ``[B]``.
            batch_adv: advantages ``[B]``.
            lr: a new learning rate, kept for later steps; ``None`` or ``0`` keeps the current
                one (PARL's ``if lr:``, so a schedule that ends at exactly 0 does not fail).

        Returns:
            ``(value_loss, action_loss, entropy_loss)`` as floats (entropy is the mean policy
            entropy, a bonus).

        Raises:
            ValueError: a shape disagrees with the batch or the model's outputs, or a discrete
                action is fractional.
            TypeError: discrete actions given to a continuous PPO, or the reverse.
        """
        where = "PPO.learn"
        self._set_lr(lr)
        tensors = self._prepare(
            batch_obs, batch_action, batch_value, batch_return, batch_logprob, batch_adv, where
        )
        value_loss, action_loss, entropy_loss = self._step(*tensors, where)[:3].numpy().tolist()
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
        """Run ``epochs`` passes over a rollout, each shuffled into ``num_minibatches`` steps.

        The inputs are the whole rollout, flattened to ``[B, ...]`` and laid out as for
        :meth:`learn`; they are converted and checked once, and the statistics are read back
        once (per epoch with ``target_kl``), which saves paddle's per-call overhead compared
        with calling :meth:`learn` in a loop. With ``config.target_kl``, the loop stops after
        the first epoch whose mean ``approx_kl`` exceeds it (CleanRL's rule).

        Args:
            epochs: passes over the rollout (at most, with ``target_kl``).
            num_minibatches: minibatches per pass; ``B`` must be divisible by it.
            lr: learning rate for these steps (kept afterwards); ``None`` or ``0`` keeps the
                current one.
            rng: the generator that shuffles; a fresh unseeded one if ``None``.

        Returns:
            A :class:`PPOStats`: the means over all steps taken, the rollout's explained
            variance and the number of epochs run.
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
        steps: list[paddle.Tensor] = []
        epochs_run = 0
        for _ in range(epochs):
            epoch = self._epoch(tensors, num_minibatches, rng, where)
            steps += epoch
            epochs_run += 1
            target_kl = self.config.target_kl
            if target_kl is not None and float(paddle.stack(epoch)[:, 3].mean()) > target_kl:
                break
        means = paddle.stack(steps).mean(0)
        value_loss, action_loss, entropy, approx_kl, clip_fraction, explained_variance = (
            paddle.concat([means, explained.reshape([1])]).numpy().tolist()
        )
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
    ) -> list[paddle.Tensor]:
        """One shuffled pass over the rollout; the statistics of each gradient step."""
        if num_minibatches == 1:
            # A full-batch step does not depend on the order: no shuffle, no gather.
            return [self._step(*tensors, where)]
        batch = tensors[0].shape[0]
        size = batch // num_minibatches
        order = paddle.to_tensor(rng.permutation(batch))
        stats = []
        for start in range(0, batch, size):
            index = order[start : start + size]
            obs, action, value, returns, logp, adv = (paddle.gather(t, index) for t in tensors)
            stats.append(self._step(obs, action, value, returns, logp, adv, where))
        return stats


def _explained_variance(values: paddle.Tensor, returns: paddle.Tensor) -> paddle.Tensor:
    """``1 - Var(returns - values) / Var(returns)``; nan when the returns are constant."""
    values, returns = values.astype("float32"), returns.astype("float32")
    var_returns = (returns - returns.mean()).square().mean()
    residual = returns - values
    var_residual = (residual - residual.mean()).square().mean()
    nan = paddle.full([], float("nan"), "float32")
    return paddle.where(var_returns > 0, 1.0 - var_residual / var_returns, nan)
