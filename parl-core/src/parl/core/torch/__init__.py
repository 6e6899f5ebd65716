"""The torch backend: ``parl.core.torch.Model`` (a ``torch.nn.Module``), ``Algorithm``, ``Agent``.

The same surface as the paddle classes (:mod:`parl.core.paddle`), with PARL 2.x's torch
semantics: ``get_weights``/``set_weights`` exchange a flat dict of numpy arrays,
``sync_weights_to(target, decay)`` updates a target network, the Agent takes numpy in and gives
numpy out, on the ``device`` it was given. ``parl.Model`` and its siblings are these classes
when ``PARL_BACKEND=torch`` (or torch is the only framework installed); this name reaches them
whatever the selection, so one process may use both backends. They are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from parl.core.torch.agent import Agent
    from parl.core.torch.algorithm import Algorithm
    from parl.core.torch.model import Model

__all__ = ["Agent", "Algorithm", "Model"]

_LAZY = {
    "Agent": "parl.core.torch.agent",
    "Algorithm": "parl.core.torch.algorithm",
    "Model": "parl.core.torch.model",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
