"""``MLPPolicy``: the small deterministic policy evolution strategies search over."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from parl.core.neutral import Model
from parl.core.ops import Tensor

__all__ = ["MLPPolicy"]


class MLPPolicy(Model):
    """``obs → [Linear → tanh] × len(hidden_sizes) → Linear``: action logits or means.

    Salimans et al. used two tanh layers of 64 units on MuJoCo; ``hidden_sizes=()`` is a
    linear policy, enough for CartPole. It lives in the package (not in an example script) so
    that remote actors import it by name. Written once: ``backend="torch"`` builds a torch
    policy, ``"paddle"`` a paddle one (default :func:`parl.get_backend`).

    Args:
        obs_dim: size of a flat observation.
        act_dim: number of discrete actions (logits) or the size of a Box action.
        hidden_sizes: widths of the tanh hidden layers.
        backend: ``"paddle"`` or ``"torch"``.

    Examples:
        >>> policy = MLPPolicy(4, 2, hidden_sizes=(8,), backend="paddle")
        >>> [name for name, _ in policy.named_parameters()]
        ['layers.0.weight', 'layers.0.bias', 'layers.1.weight', 'layers.1.bias']
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int] = (64, 64),
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        sizes = [obs_dim, *hidden_sizes, act_dim]
        if min(sizes) < 1:
            raise ValueError(f"layer sizes must be >= 1, got {sizes} (obs, hidden…, act)")
        self.layers = self.ops.layer_list(self.nn.Linear(i, o) for i, o in pairwise(sizes))

    def forward(self, obs: Tensor) -> Tensor:
        last = len(self.layers) - 1
        for index in range(last):
            obs = self.layers[index](obs).tanh()
        return self.layers[last](obs)
