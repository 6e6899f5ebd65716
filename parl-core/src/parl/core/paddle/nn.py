"""``paddle.nn`` as networks written once see it (``Model.nn`` and ``ops.nn`` on paddle).

The same namespace as ``paddle.nn``, with one layer replaced: :class:`Linear`. paddle's own
``Linear.forward`` goes through ``paddle.nn.functional.linear``, which reads a global flag
(``FLAGS_use_legacy_linear``) and asks whether paddle was built with CUDA on every call: about
15 µs a layer on a CPU build, a tenth of a DQN update at CartPole sizes
(``python -m benchmarks.core.bench_ops``). On a CPU build that function always ends in the one
kernel :class:`Linear` calls directly, so outputs, gradients, parameters and their names are
paddle's own; on a CUDA build the layer is paddle's, unchanged.
"""

from __future__ import annotations

from typing import Any

import paddle
from paddle import _C_ops
from paddle import nn as _paddle_nn

__all__ = ["Linear"]

# Where paddle.nn.functional.linear ends in _C_ops.linear whenever it runs eagerly.
_DIRECT_KERNEL = not paddle.is_compiled_with_cuda()


class Linear(_paddle_nn.Linear):
    """``paddle.nn.Linear`` (same arguments, weights ``[in, out]``), calling its kernel directly
    when running eagerly on a CPU build of paddle."""

    def forward(self, input: paddle.Tensor) -> paddle.Tensor:
        if _DIRECT_KERNEL and paddle.in_dynamic_mode():
            return _C_ops.linear(input, self.weight, self.bias)
        return super().forward(input)


def __getattr__(name: str) -> Any:
    """Every other name is ``paddle.nn``'s."""
    return getattr(_paddle_nn, name)
