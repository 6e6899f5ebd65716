"""Target networks on torch: a frozen copy of a model, and hard or soft (Polyak) updates of it.

The torch twin of :mod:`parl.core.paddle.target`, with the same checks (shared in
:mod:`parl.core.weights`): both work on the whole state dict, parameters *and* persistent
buffers, so statistics such as BatchNorm's running mean and variance reach the target too.
"""

from __future__ import annotations

import copy
from typing import TypeVar

from parl.core.weights import check_decay, state_pairs

import torch

__all__ = ["make_target", "update_target"]

ModuleT = TypeVar("ModuleT", bound=torch.nn.Module)


def make_target(model: ModuleT) -> ModuleT:
    """Return an independent deep copy of ``model`` whose parameters take no gradients."""
    target = copy.deepcopy(model)
    target.requires_grad_(False)
    return target


def update_target(source: torch.nn.Module, target: torch.nn.Module, decay: float = 0.0) -> None:
    """Move ``target`` towards ``source``: ``target = decay·target + (1 − decay)·source``.

    Applied, without gradients and in place, to every floating-point entry of the state dict
    (parameters and persistent buffers); other entries (counters) are copied. ``decay=0`` is a
    hard copy, ``decay = 1 − tau`` a Polyak update with rate ``tau``.

    Raises:
        ValueError: ``decay`` is outside ``[0, 1]`` or ``target`` is ``source``.
        WeightsMismatchError: the two networks' state dicts differ in names or shapes.
    """
    if target is source:
        raise ValueError("update_target needs a separate target network, got the source itself")
    decay = check_decay(decay)
    pairs = state_pairs(
        source.state_dict(), target.state_dict(), type(source).__name__, type(target).__name__
    )
    if decay == 1.0:
        return
    with torch.no_grad():
        blend = [(s, d) for s, d in pairs if decay != 0.0 and d.is_floating_point()]
        copies = [(s, d) for s, d in pairs if decay == 0.0 or not d.is_floating_point()]
        if blend:  # one fused kernel for all entries: d += (1 - decay) * (s - d)
            torch._foreach_lerp_([d for _, d in blend], [s for s, _ in blend], 1.0 - decay)
        for src, dst in copies:
            dst.copy_(src)
