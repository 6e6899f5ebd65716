"""Proximal Policy Optimization (``PPO``, clipped surrogate) and its hyperparameters, written once
for paddle and torch."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any, NamedTuple

from parl.core.config import UNSET, AlgorithmConfig
from parl.core.ops import Tensor
from parl.core.replicas import replica_count, replica_sum
from parl.core.validation import positive_int

import numpy as np
from pydantic import Field, NonNegativeFloat, PositiveFloat

from parl_algos_pg.on_policy import OnPolicyAlgorithm

__all__ = ["PARL_DRAW_AXIS", "PPO", "PPOBatch", "PPOConfig", "PPOStats", "PolicySample"]

ADV_EPS = 1e-8
"""Added to the advantages' standard deviation when normalising them."""

PARL_DRAW_AXIS: dict[str, bool] = {"paddle": True, "torch": False}
"""Whether PARL 2.2.1's ``PPO.sample`` on a framework returns actions and log-probabilities with a
leading axis of one draw: paddle's does (``dist.sample([1])``: ``[1, B, ...]``, its agents take
``[0]``), torch's does not (``[B, ...]``). :meth:`PPO.sample` follows it, so each framework's
PARL code runs unchanged; this is the one place where PPO's behaviour depends on the framework.
:meth:`PPO.act`, which :class:`~parl_algos_pg.agent.PPOAgent` uses, has no such axis on either."""


class PPOConfig(AlgorithmConfig):
    """Hyperparameters of :class:`PPO` (PARL's names and defaults)."""

    clip_param: float = Field(default=0.1, gt=0.0, le=1.0)
    """Clip range ε of the probability ratio (and of the value change when clipping it)."""

    value_loss_coef: NonNegativeFloat = 0.5
    """Weight of the value loss in the total loss."""

    entropy_coef: NonNegativeFloat = 0.01
    """Weight of the entropy bonus (subtracted from the loss)."""

    initial_lr: PositiveFloat = 2.5e-4
    """Learning rate of Adam until ``learn(..., lr=...)`` sets another."""

    eps: PositiveFloat = 1e-5
    """Adam's epsilon."""

    max_grad_norm: PositiveFloat | None = 0.5
    """Gradients are rescaled so that their global L2 norm is at most this; None: no clipping."""

    use_clipped_value_loss: bool = True
    """Clip the value prediction to ``old_value ± clip_param`` in the value loss, as PPO2."""

    norm_adv: bool = True
    """Normalise advantages to zero mean and unit variance within each minibatch."""

    continuous_action: bool = False
    """Gaussian policy over a Box action space instead of a categorical one."""

    target_kl: PositiveFloat | None = None
    """``learn_epochs`` stops after the epoch whose mean ``approx_kl`` exceeds this; None: never."""


class PPOStats(NamedTuple):
    """What :meth:`PPO.learn_epochs` reports: means over the gradient steps it took."""

    value_loss: float
    """The value loss."""
    action_loss: float
    """The clipped surrogate loss."""
    entropy: float
    """The mean policy entropy."""
    approx_kl: float
    """``mean((ratio - 1) - log ratio)``: an unbiased, non-negative estimate of
    KL(old policy ‖ new policy) on the minibatch (Schulman's k3 estimator, as CleanRL)."""
    clip_fraction: float
    """The fraction of samples whose probability ratio left ``[1 - ε, 1 + ε]``."""
    explained_variance: float
    """``1 - Var(returns - old values) / Var(returns)`` of the rollout: 1 is a perfect value
    function, 0 no better than a constant, nan when the returns do not vary."""
    epochs: int
    """Epochs run: fewer than asked when ``target_kl`` stopped the loop."""


class PolicySample(NamedTuple):
    """One draw of the policy per observation (:meth:`PPO.act`), no gradients."""

    value: Tensor
    """State values ``[B]``."""
    action: Tensor
    """int64 ``[B]`` (discrete) or float32 ``[B, act_dim]`` (continuous)."""
    log_prob: Tensor
    """Log-probabilities of the actions ``[B]``."""
    entropy: Tensor
    """Policy entropies ``[B]``."""


class PPOBatch(NamedTuple):
    """A checked batch of on-policy samples (a rollout or a minibatch of it), tensors on the
    algorithm's device."""

    obs: Tensor
    """float32 ``[B, ...]``."""
    action: Tensor
    """int64 ``[B]`` or float32 ``[B, act_dim]``."""
    value: Tensor
    """The values predicted when acting ``[B]``."""
    returns: Tensor
    """Value targets ``[B]``."""
    log_prob: Tensor
    """Log-probabilities of the actions when acting ``[B]``."""
    advantage: Tensor
    """Advantages ``[B]``."""


def _squeeze_value(value: Tensor) -> Tensor:
    """``[B, 1]`` values to ``[B]``; anything else as the model returned it."""
    return value.squeeze(-1) if value.ndim >= 2 and value.shape[-1] == 1 else value


class PPO(OnPolicyAlgorithm):
    """Proximal Policy Optimization with a clipped surrogate objective (Schulman et al., 2017).

    "Proximal Policy Optimization Algorithms", arXiv:1707.06347. One :meth:`learn` call is one
    gradient step on a minibatch::

        ratio  = exp(log π(a|s) - old_log_prob)
        L_clip = -mean(min(ratio · A, clip(ratio, 1 - ε, 1 + ε) · A))
        L_v    = 0.5 · mean(max((V - R)², (old_V + clip(V - old_V, -ε, ε) - R)²))
        loss   = value_loss_coef · L_v + L_clip - entropy_coef · H

    where ``A`` is normalised per minibatch when ``norm_adv`` (PARL's rules). Unlike PARL's
    paddle PPO, which clipped each gradient tensor separately, gradients are clipped by their
    **global** norm, as PARL's torch PPO, the PPO paper's code and CleanRL. It runs on the
    framework of its model (paddle or torch) and, on torch, on the model's device.

    Model contract (checked at construction):

    * ``value(obs)`` → state values ``[B]`` or ``[B, 1]``;
    * ``policy(obs)`` → logits ``[B, n_actions]`` when ``continuous_action=False``;
      ``(mean, std)`` when ``continuous_action=True``, the mean ``[B, act_dim]`` and the
      standard deviation (not its log, as in PARL) of that shape or broadcastable to it, such
      as ``exp(log_std)`` of a state-independent ``[1, act_dim]`` parameter.

    Advantages and returns (e.g. GAE from ``parl.utils.compute_gae``) are computed by the
    caller. ``predict``, ``sample`` and ``value`` give the observation to the model as it is,
    so one unbatched observation works as in PARL 2.x; ``learn`` checks that every input has
    one entry per observation.

    The positional hyperparameters after ``model`` (``clip_param`` … ``continuous_action``)
    are the fields of :class:`PPOConfig`, in PARL's order; ``None`` keeps the config's value,
    except for ``max_grad_norm``, where ``None`` switches clipping off.

    Args:
        model: the actor-critic model.
        device: torch only: move the model there (``"cpu"``, ``"cuda"``, ``"cuda:<index>"``).
        config: a :class:`PPOConfig` or a mapping of its fields.
        **options: further config fields (an unknown name is a ``ValidationError``).

    Examples:
        >>> import parl
        >>> from parl_algos_pg import DiscretePPOModel
        >>> PPO = parl.algorithms.get("PPO")
        >>> alg = PPO(DiscretePPOModel(4, 2), clip_param=0.2, initial_lr=2.5e-4)
    """

    Config = PPOConfig
    required_model_methods = ("policy", "value")
    # compile=True captures the minibatch step, which learn and learn_epochs share.
    captured_methods = ("_step",)
    config: PPOConfig

    def __init__(
        self,
        model: Any,
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
        device: Any = None,
        config: PPOConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("PPO needs a model with policy() and value(): PPO(model, ...)")
        super().__init__(
            model,
            device=device,
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
        self.continuous_action = self.config.continuous_action
        # Walking the layer tree for its parameters costs more than a small layer's matmul.
        self._parameters = list(self.model.parameters())
        cfg = self.config
        self.optimizer = self.ops.adam_with_eps(self._parameters, cfg.initial_lr, cfg.eps)

    def _policy_output(self, obs: Tensor) -> Any:
        return self.model.policy(obs)

    def _actions_hint(self, continuous: bool) -> str:
        if continuous:
            return (
                "this PPO has continuous_action=True and needs float actions [B, act_dim]; "
                "build it with continuous_action=False for a Discrete action space"
            )
        return (
            "this PPO has continuous_action=False; build it with continuous_action=True for a "
            "Box action space, or cast discrete actions with .astype('int64')"
        )

    # -- acting -------------------------------------------------------------------------------

    def act(self, obs: Any) -> PolicySample:
        """Draw one action per observation (no gradients): one observation or a batch
        ``[B, ...]``; for one observation the ``B`` axis is absent."""
        obs = self._obs(obs)
        with self.ops.no_grad():
            value = _squeeze_value(self.model.value(obs))
            dist = self._distribution(obs, "PPO.sample")
            action = dist.sample()
            return PolicySample(value, action, dist.log_prob(action), dist.entropy())

    def sample(self, obs: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """PARL's ``(value, action, action_log_probs, action_entropy)`` of :meth:`act`.

        On paddle, actions and log-probabilities carry PARL's paddle leading axis of one draw
        (``[1, B, ...]``); on torch they are ``[B, ...]``, as PARL's torch PPO
        (:data:`PARL_DRAW_AXIS`). Values ``[B]`` and entropies ``[B]`` on both.
        """
        step = self.act(obs)
        if not PARL_DRAW_AXIS[self.backend.name]:
            return step.value, step.action, step.log_prob, step.entropy
        return step.value, step.action.unsqueeze(0), step.log_prob.unsqueeze(0), step.entropy

    def predict(self, obs: Any) -> Tensor:
        """Return greedy actions: the argmax ``[B]`` (discrete) or the mean (continuous)."""
        with self.ops.no_grad():
            return self._distribution(self._obs(obs), "PPO.predict").mode()

    def value(self, obs: Any) -> Tensor:
        """Return state values ``[B]`` of a batch (no gradients); ``[B, 1]`` is squeezed."""
        with self.ops.no_grad():
            return _squeeze_value(self.model.value(self._obs(obs)))

    # -- learning -----------------------------------------------------------------------------

    def learn(
        self,
        batch_obs: Any,
        batch_action: Any,
        batch_value: Any,
        batch_return: Any,
        batch_logprob: Any,
        batch_adv: Any,
        lr: float | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Take one gradient step on a minibatch (PARL's signature).

        Args:
            batch_obs: observations ``[B, ...]`` (tensors or numpy arrays, as every input).
            batch_action: the actions taken: ints ``[B]`` (floats holding whole numbers are
                accepted, as PARL's Atari PPO passes them) or float ``[B, act_dim]``.
            batch_value: the values predicted when acting ``[B]``.
            batch_return: value targets ``[B]`` (advantages + values).
            batch_logprob: log-probabilities of the actions when acting ``[B]``.
            batch_adv: advantages ``[B]``.
            lr: a new learning rate, kept for later steps; ``None`` or ``0`` keeps the current
                one (PARL's ``if lr:``, so a schedule that ends at exactly 0 does not fail).

        Returns:
            ``(value_loss, action_loss, entropy_loss)`` as scalar tensors (entropy is the mean
            policy entropy, a bonus): PARL returned floats; call ``float`` on them only when
            logging, which saves a wait for the device per step.

        Raises:
            ValueError: a shape disagrees with the batch or the model's outputs, or a discrete
                action is fractional.
            TypeError: discrete actions given to a continuous PPO, or the reverse.
        """
        where = "PPO.learn"
        batch = self._batch(
            batch_obs, batch_action, batch_value, batch_return, batch_logprob, batch_adv, where
        )
        self._set_lr(lr)
        stats = self._step(batch, where)
        return stats[0], stats[1], stats[2]

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
        once (per epoch with ``target_kl``), which saves the framework's per-call overhead
        compared with calling :meth:`learn` in a loop. With ``config.target_kl``, the loop
        stops after the first epoch whose mean ``approx_kl`` exceeds it (CleanRL's rule).

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
        batch = self._batch(
            batch_obs, batch_action, batch_value, batch_return, batch_logprob, batch_adv, where
        )
        size = batch.obs.shape[0]
        if size % num_minibatches:
            raise ValueError(
                f"{where}: the rollout has {size} samples, which does not split into "
                f"{num_minibatches} equal minibatches; pick num_minibatches dividing {size}"
            )
        self._set_lr(lr)
        rng = rng if rng is not None else np.random.default_rng()
        steps: list[Tensor] = []
        kl, epochs_run = self.config.target_kl, 0
        while epochs_run < epochs:
            stats = self._epoch(batch, num_minibatches, rng, where)
            steps, epochs_run = steps + stats, epochs_run + 1
            if kl is not None and self._mean_kl(stats) > kl:
                break
        means = self.ops.mean(self.ops.stack(steps), axis=0)
        explained = self._explained_variance(batch).reshape([1])
        value_loss, action_loss, entropy, approx_kl, clip_fraction, explained_variance = (
            self.ops.to_numpy(self.ops.concat([means, explained])).tolist()
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

    def _mean_kl(self, stats: list[Tensor]) -> float:
        """The epoch's mean ``approx_kl``; over every process with ``replicas``, so that all of
        them stop after the same epoch."""
        local = self.ops.stack(stats)[:, 3].mean()
        return float(replica_sum(self.replicas, local)) / replica_count(self.replicas)

    def _epoch(
        self, batch: PPOBatch, num_minibatches: int, rng: np.random.Generator, where: str
    ) -> list[Tensor]:
        """One shuffled pass over the rollout; the statistics of each gradient step."""
        if num_minibatches == 1:
            # A full-batch step does not depend on the order: no shuffle, no gather.
            return [self._step(batch, where)]
        size = batch.obs.shape[0]
        order = self.ops.to_tensor(rng.permutation(size), "int64", self.device)
        step = size // num_minibatches
        return [
            self._step(self._rows(batch, order[start : start + step]), where)
            for start in range(0, size, step)
        ]

    def _rows(self, batch: PPOBatch, index: Tensor) -> PPOBatch:
        """The minibatch of ``batch`` at ``index``."""
        return PPOBatch._make(self.ops.take_rows(tensor, index) for tensor in batch)

    def _step(self, batch: PPOBatch, where: str) -> Tensor:
        """One gradient step on the loss of the class docstring.

        Returns:
            ``[value_loss, action_loss, entropy, approx_kl, clip_fraction]`` (no gradients).
        """
        ops, cfg, eps = self.ops, self.config, self.config.clip_param
        value = self._value(batch.obs, where)
        dist = self._distribution(batch.obs, where, batch.obs.shape[0])
        log_prob, entropy = dist.log_prob(batch.action), dist.entropy().mean()
        adv = self._normalised(batch.advantage) if cfg.norm_adv else batch.advantage
        log_ratio = log_prob - batch.log_prob
        ratio = log_ratio.exp()
        action_loss = -ops.minimum(ratio * adv, ops.clip(ratio, 1.0 - eps, 1.0 + eps) * adv).mean()
        value_error = (value - batch.returns).square()
        if cfg.use_clipped_value_loss:
            clipped = batch.value + ops.clip(value - batch.value, -eps, eps)
            value_error = ops.maximum(value_error, (clipped - batch.returns).square())
        value_loss = 0.5 * value_error.mean()
        loss = cfg.value_loss_coef * value_loss + action_loss - cfg.entropy_coef * entropy
        ops.step(self.optimizer, loss, self._parameters, cfg.max_grad_norm, self.replicas)
        with ops.no_grad():
            approx_kl = ((ratio - 1.0) - log_ratio).mean()
            clip_fraction = ops.to_tensor((ratio - 1.0).abs() > eps, "float32").mean()
            losses = [value_loss.detach(), action_loss.detach(), entropy.detach()]
            return ops.stack([*losses, approx_kl, clip_fraction])

    def _normalised(self, adv: Tensor) -> Tensor:
        """Advantages with zero mean and unit (unbiased) standard deviation; one is kept.

        The statistics are the whole minibatch's: with data-parallel ``replicas`` each process
        holds part of it, and the sums are added up over them.
        """
        count = adv.shape[0] * replica_count(self.replicas)
        if count < 2:
            return adv
        centered = adv - replica_sum(self.replicas, adv.sum()) / count
        variance = replica_sum(self.replicas, centered.square().sum()) / (count - 1)
        return centered / (variance.sqrt() + ADV_EPS)

    def _value(self, obs: Tensor, where: str) -> Tensor:
        value = _squeeze_value(self.model.value(obs))
        if value.ndim != 1 or value.shape[0] != obs.shape[0]:
            raise ValueError(
                f"{where}: model.value returned {list(value.shape)}, expected "
                f"[{obs.shape[0]}] or [{obs.shape[0]}, 1]"
            )
        return value

    def _explained_variance(self, batch: PPOBatch) -> Tensor:
        """``1 - Var(returns - values) / Var(returns)``; nan when the returns are constant."""
        returns = batch.returns
        var_returns = (returns - returns.mean()).square().mean()
        residual = returns - batch.value
        var_residual = (residual - residual.mean()).square().mean()
        return self.ops.where(var_returns > 0, 1.0 - var_residual / var_returns, float("nan"))

    def _batch(
        self,
        obs: Any,
        action: Any,
        value: Any,
        returns: Any,
        log_prob: Any,
        adv: Any,
        where: str,
    ) -> PPOBatch:
        """The inputs of ``learn`` converted, checked against each other and the model, and
        moved to the device."""
        obs = self._batch_obs(obs, where)
        if not self.continuous_action:
            action = self._whole_numbers(action, where)
        size = obs.shape[0]
        return PPOBatch(
            obs,
            self._actions(action, obs, where),
            self._batch_vector(value, size, "batch_value", where),
            self._batch_vector(returns, size, "batch_return", where),
            self._batch_vector(log_prob, size, "batch_logprob", where),
            self._batch_vector(adv, size, "batch_adv", where),
        )

    def _whole_numbers(self, action: Any, where: str) -> Any:
        """Discrete actions held as floats (PARL's Atari PPO stores them in a float buffer) as
        int64; other actions as they are. A fractional value in host data (numpy) is refused,
        not truncated; a float tensor is cast where it lives, unread (no wait for the device)."""
        is_tensor = isinstance(action, self.backend.tensor_type)
        floats = action.is_floating_point() if is_tensor else np.asarray(action).dtype.kind == "f"
        shape = tuple(action.shape) if is_tensor else np.shape(action)
        if not floats or not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
            return action
        if is_tensor:
            return self.ops.to_tensor(action, "int64")
        values = np.asarray(action, np.float64)
        bad = values[~np.isfinite(values) | (values != np.round(values))]
        if bad.size:
            raise ValueError(
                f"{where}: discrete actions must be whole numbers, got {float(bad[0])!r} in a "
                "float batch; pass the sampled action indices (ints, or floats such as 3.0); "
                f"{self._actions_hint(False)}"
            )
        return values.astype(np.int64)

    def _set_lr(self, lr: Any) -> None:
        """PARL's ``if lr: set_lr(lr)``: ``None`` and ``0`` keep the current rate.

        Raises:
            ValueError: ``lr`` is not a non-negative number.
        """
        if lr is None:
            return
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not float(lr) >= 0:
            raise ValueError(
                f"lr must be a non-negative number or None, got {lr!r} (None and 0 keep the "
                "optimizer's current rate)"
            )
        if float(lr) > 0:
            self.ops.set_lr(self.optimizer, float(lr))
