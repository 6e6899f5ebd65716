"""CPU time of the 256-wide matmuls that SAC/TD3 updates are made of, in paddle or torch.

Run it with each framework's interpreter, one after the other, and compare::

    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.ac.matmul_speed
    OMP_NUM_THREADS=1 /work/venvs/sb3/bin/python -m benchmarks.ac.matmul_speed

Each line is the mean process CPU milliseconds of one call over 300 calls after 20 warm-up ones.
The paddle side imports ``parl`` first, as every PARL program does: on AMD CPUs that sets
``MKL_DEBUG_CPU_TYPE=5`` (:func:`parl.core.paddle.mkl.prefer_fast_mkl_kernels`), without which
paddle's MKL runs its generic kernels, about 3.5× slower here; ``MKL_DEBUG_CPU_TYPE=0`` shows those.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable


def per_call_ms(call: Callable[[], object], repeats: int = 300) -> float:
    for _ in range(20):
        call()
    start = time.process_time()
    for _ in range(repeats):
        call()
    return (time.process_time() - start) / repeats * 1e3


def main() -> None:
    if importlib.util.find_spec("paddle") is not None:
        import parl  # noqa: F401  # MKL's fast kernels on AMD CPUs, as in any PARL program

        import paddle

        paddle.set_device("cpu")
        x, w = paddle.randn([256, 256]), paddle.randn([2, 256, 256])
        w0, w1 = w[0].clone(), w[1].clone()
        print(f"paddle {paddle.__version__}")
        print(f"[256,256]@[2,256,256] (batched critics): {per_call_ms(lambda: x @ w):.2f} ms")
        print(f"2 x [256,256]@[256,256]: {per_call_ms(lambda: (x @ w0, x @ w1)):.2f} ms")
    else:
        import torch

        x, w0, w1 = torch.randn(256, 256), torch.randn(256, 256), torch.randn(256, 256)
        print(f"torch {torch.__version__}")
        print(f"2 x [256,256]@[256,256]: {per_call_ms(lambda: (x @ w0, x @ w1)):.2f} ms")


if __name__ == "__main__":
    main()
