"""The shape checks of ``learn`` batches, written once for both backends.

A ``[B]`` reward added to a ``[B, 1]`` value would broadcast to ``[B, B]`` without a word; here
it is either reshaped (``[B, 1]`` to ``[B]``) or refused with the shapes in the message. A
:class:`BatchChecks` is built from a backend's ``to_tensor`` and ``is_integer`` and uses only
what paddle and torch tensors share (``ndim``, ``shape``, ``squeeze``, ``unsqueeze``,
``min``/``max``); :mod:`parl.core.paddle.batch` (paddle) and :mod:`parl.core.torch.batch` expose its
methods as functions. This module imports neither framework.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["BatchChecks"]


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _refuse_dtype(wrong: bool, action: Any, what: str, where: str, hint: str) -> None:
    if wrong:
        dtype = getattr(action, "dtype", type(action).__name__)
        raise TypeError(f"{where}: {what}, got dtype {dtype}; {hint}")


TensorT = TypeVar("TensorT")
"""The backend's tensor type (what its ``to_tensor`` returns)."""


@dataclass(frozen=True)
class BatchChecks(Generic[TensorT]):
    """Batch conversion and checks over one backend's ``to_tensor(value, dtype)``.

    Attributes:
        to_tensor: returns ``value`` as a tensor of the dtype named (``"float32"``,
            ``"int64"``), converting numpy arrays and lists.
        is_integer: whether a tensor or array-like holds integers.
    """

    to_tensor: Callable[[Any, str], TensorT]
    is_integer: Callable[[Any], bool]

    def as_batch_obs(self, obs: Any, where: str, name: str = "obs") -> TensorT:
        """Return a float32 ``[B, ...]`` observation batch; a single 1-D observation is refused."""
        tensor: Any = self.to_tensor(obs, "float32")
        if tensor.ndim < 2:
            raise ValueError(
                f"{where}: {name} must be a batch shaped [B, obs_dim], got shape "
                f"{list(tensor.shape)}; add a batch axis, e.g. {name}[None]"
            )
        return tensor

    def as_batch_vector(
        self, value: Any, batch: int, name: str, where: str, dtype: str = "float32"
    ) -> TensorT:
        """Return a ``[B]`` tensor of ``dtype`` from a ``[B]`` or ``[B, 1]`` input."""
        tensor: Any = self.to_tensor(value, dtype)
        vector = tensor.squeeze(-1) if tensor.ndim == 2 and tensor.shape[1] == 1 else tensor
        _expect(
            vector.ndim == 1 and vector.shape[0] == batch,
            f"{where}: {name} must have shape [{batch}] or [{batch}, 1] to match the {batch} "
            f"observations, got {list(tensor.shape)}",
        )
        return vector

    def as_batch_actions(
        self,
        action: Any,
        batch: int,
        where: str,
        hint: str = "cast them, e.g. action.astype('int64')",
    ) -> TensorT:
        """Return int64 ``[B]`` discrete actions from a ``[B]`` or ``[B, 1]`` integer input.

        Args:
            hint: how to fix float actions, appended to the ``TypeError``.
        """
        wrong = not self.is_integer(action)
        _refuse_dtype(wrong, action, "discrete actions must be integers", where, hint)
        return self.as_batch_vector(action, batch, "discrete actions", where, "int64")

    def as_batch_continuous_actions(
        self, action: Any, batch: int, where: str, hint: str = "pass float actions [B, act_dim]"
    ) -> TensorT:
        """Return float32 ``[B, act_dim]`` continuous actions; ``[B]`` is read as ``[B, 1]``.

        Args:
            hint: how to fix integer actions, appended to the ``TypeError``.
        """
        wrong = self.is_integer(action)
        _refuse_dtype(wrong, action, "continuous actions must be floats", where, hint)
        tensor: Any = self.to_tensor(action, "float32")
        matrix = tensor.unsqueeze(-1) if tensor.ndim == 1 else tensor
        _expect(
            matrix.ndim == 2 and matrix.shape[0] == batch,
            f"{where}: continuous actions must have shape [{batch}, act_dim], got "
            f"{list(tensor.shape)}",
        )
        return matrix

    @staticmethod
    def check_action_range(action: Any, n_actions: int, where: str) -> None:
        """Raise unless every discrete action given as host data lies in ``[0, n_actions)``.

        Only numpy arrays, lists and tuples are read: pass ``learn``'s input as given, before
        it becomes a tensor. A tensor is not checked, since reading its values would make the
        host wait for the device on every update; an index out of range then fails in the
        framework's own gather.
        """
        if not isinstance(action, (np.ndarray, list, tuple)):
            return
        array = np.asarray(action)
        if array.size == 0:
            return
        low, high = int(array.min()), int(array.max())
        if low < 0 or high >= n_actions:
            raise ValueError(
                f"{where}: actions must lie in [0, {n_actions}) for a model with {n_actions} "
                f"outputs, got values in [{low}, {high}]"
            )
