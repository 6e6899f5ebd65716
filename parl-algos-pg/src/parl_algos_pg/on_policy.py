"""What REINFORCE and PPO share: the policy as an action distribution, and the actions taken."""

from __future__ import annotations

from typing import Any, ClassVar

from parl.core.distributions import Categorical, DiagGaussian
from parl.core.neutral import Algorithm
from parl.core.ops import Tensor

__all__ = ["OnPolicyAlgorithm"]


class OnPolicyAlgorithm(Algorithm):
    """Base of the family's algorithms: a stochastic policy trained on the actions it took.

    A subclass says how its model gives the policy (:meth:`_policy_output`) and whether the
    actions are continuous (:attr:`continuous_action`). This class turns that output into a
    :class:`~parl.core.distributions.Categorical` (logits) or a
    :class:`~parl.core.distributions.DiagGaussian` (``(mean, std)``, the std broadcasting to the
    mean), with errors that name the model's mistake, and converts and checks a batch of the
    actions taken against the policy's width. Written once for paddle and torch.
    """

    continuous_action: bool = False
    """Whether actions are float vectors (a Gaussian policy) rather than indices."""
    policy_method: ClassVar[str] = "policy"
    """The model method that gives the policy (named in errors)."""

    _action_width: int | None = None

    def _policy_output(self, obs: Tensor) -> Any:
        """What the model gives for the policy at ``obs``: logits, or ``(mean, std)``."""
        raise NotImplementedError

    def _distribution(self, obs: Tensor, where: str, batch: int | None = None) -> Any:
        """The action distribution at ``obs`` (gradients flow); ``batch``: check its shape."""
        out = self._policy_output(obs)
        as_dist = self._gaussian if self.continuous_action else self._categorical
        dist = as_dist(out, where)
        if batch is not None and list(dist.batch_shape) != [batch]:
            raise ValueError(
                f"{where}: model.{self.policy_method} gives one action distribution per entry of "
                f"{list(dist.batch_shape)}, expected [{batch}] for {batch} observations"
            )
        return dist

    def _categorical(self, out: Any, where: str) -> Categorical:
        if isinstance(out, (tuple, list)):
            gaussian = "continuous_action" in type(self.config).model_fields
            raise TypeError(
                f"{where}: model.{self.policy_method} must return logits, got a "
                f"{type(out).__name__} of {len(out)}"
                + ("; pass continuous_action=True for a Gaussian policy" if gaussian else "")
            )
        return Categorical(out)

    def _gaussian(self, out: Any, where: str) -> DiagGaussian:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(
                f"{where}: with continuous_action=True, model.{self.policy_method} must return "
                f"(mean, std), got {type(out).__name__}; return logits only with "
                "continuous_action=False"
            )
        mean, std = out
        try:
            return DiagGaussian(mean, std)
        except ValueError as exc:
            raise ValueError(
                f"{where}: model.{self.policy_method} returned mean {list(mean.shape)} and std "
                f"{list(std.shape)}, which do not broadcast (std may be [act_dim], [1, act_dim] "
                "or the mean's shape)"
            ) from exc

    # -- batches ----------------------------------------------------------------------------

    def _obs(self, obs: Any) -> Tensor:
        """Observations as float32 on the device, as given (one or a batch), for acting."""
        return self.ops.to_tensor(obs, "float32", self.device)

    def _batch_obs(self, obs: Any, where: str) -> Tensor:
        """A float32 ``[B, ...]`` observation batch on the device (one observation is refused)."""
        return self.ops.move(self.ops.as_batch_obs(obs, where), self.device)

    def _batch_vector(self, value: Any, batch: int, name: str, where: str) -> Tensor:
        """A float32 ``[B]`` vector on the device from ``[B]`` or ``[B, 1]``."""
        return self.ops.move(self.ops.as_batch_vector(value, batch, name, where), self.device)

    def _actions_hint(self, continuous: bool) -> str:
        """How to fix actions of the wrong kind (floats for indices or the reverse)."""
        if continuous:
            return "pass float actions [B, act_dim]"
        return "cast them, e.g. action.astype('int64')"

    def _actions(self, given: Any, obs: Tensor, where: str) -> Tensor:
        """The actions taken at ``obs``, on the device: int64 ``[B]`` in ``[0, n_actions)``,
        or float32 ``[B, act_dim]`` of the policy's width.

        Raises:
            TypeError: float actions for a categorical policy, or integers for a Gaussian one.
            ValueError: a shape that does not fit the batch, or actions out of the policy's range.
        """
        ops, batch, width = self.ops, obs.shape[0], self._width(obs, where)
        if self.continuous_action:
            action = ops.as_batch_continuous_actions(given, batch, where, self._actions_hint(True))
            if action.shape[1] != width:
                raise ValueError(
                    f"{where}: actions have {action.shape[1]} dimensions but "
                    f"model.{self.policy_method} returns a {width}-dimensional mean"
                )
        else:
            action = ops.as_batch_actions(given, batch, where, self._actions_hint(False))
            # Host input is checked before it becomes a tensor; a tensor is not read back.
            ops.check_action_range(given, width, where)
        return ops.move(action, self.device)

    def _width(self, obs: Tensor, where: str) -> int:
        """The number of actions (or the action dimension) of the policy, read once."""
        if self._action_width is None:
            with self.ops.no_grad():
                dist = self._distribution(obs[:1], where, 1)
            shape = dist.mean.shape if isinstance(dist, DiagGaussian) else dist.logits.shape
            self._action_width = int(shape[-1])
        return self._action_width
