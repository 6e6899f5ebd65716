"""parl-core figures: ``import parl`` wall time (and that paddle stays out), sync_weights_to speed.

Run: ``python benchmarks/core/bench_core.py`` (writes ``benchmarks/core/results.md``).
"""

from __future__ import annotations

import copy
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _report import header

IMPORT_PROBE = (
    "import sys, time; t = time.perf_counter(); import parl; "
    "print(time.perf_counter() - t, 'paddle' in sys.modules)"
)


def import_parl(repeats: int = 15) -> tuple[float, float, bool]:
    """Time ``import parl`` in fresh interpreters; also ``import numpy`` as the baseline."""
    parl_times, numpy_times, paddle_loaded = [], [], False
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True)
        seconds, loaded = out.stdout.split()
        parl_times.append(float(seconds))
        paddle_loaded |= loaded == "True"
        probe = "import time; t = time.perf_counter(); import numpy; print(time.perf_counter() - t)"
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        numpy_times.append(float(out.stdout))
    return statistics.median(parl_times), statistics.median(numpy_times), paddle_loaded


def sync_weights(decay: float, calls: int = 3000) -> float:
    """Return µs per ``sync_weights_to`` call on a 3-layer 256-wide MLP."""
    import parl

    import paddle

    class MLP(parl.Model):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = paddle.nn.Linear(256, 256)
            self.fc2 = paddle.nn.Linear(256, 256)
            self.fc3 = paddle.nn.Linear(256, 256)

        def forward(self, x):
            return self.fc3(paddle.tanh(self.fc2(paddle.tanh(self.fc1(x)))))

    source = MLP()
    target = copy.deepcopy(source)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            source.sync_weights_to(target, decay=decay)
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


LINEAR_PROBE = """
import time, parl, paddle
layer, x = paddle.nn.Linear(256, 256), paddle.rand([64, 256])
with paddle.no_grad():
    for _ in range(100):
        layer(x)
    start = time.perf_counter()
    for _ in range(2000):
        layer(x)
print((time.perf_counter() - start) / 2000 * 1e6)
"""


def linear_forward(mkl_debug_cpu_type: str | None) -> float:
    """µs per ``Linear(256, 256)`` forward on 64 rows, in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k != "MKL_DEBUG_CPU_TYPE"}
    if mkl_debug_cpu_type is not None:
        env["MKL_DEBUG_CPU_TYPE"] = mkl_debug_cpu_type
    out = subprocess.run(
        [sys.executable, "-c", LINEAR_PROBE], capture_output=True, text=True, env=env, check=True
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    parl_s, numpy_s, paddle_loaded = import_parl()
    rows = [
        "| figure | value | goal |",
        "|---|---|---|",
        f"| `import parl` wall time (median of 15 fresh interpreters) | {parl_s * 1e3:.1f} ms "
        f"(baseline `import numpy`: {numpy_s * 1e3:.1f} ms) | < 300 ms |",
        f"| paddle in `sys.modules` after `import parl` | {paddle_loaded} | False |",
    ]
    for decay in (0.0, 0.995):
        rows.append(
            f"| `sync_weights_to`, 3×256 MLP, decay {decay} (best of 3 × 3000 calls) "
            f"| {sync_weights(decay):.1f} µs/call | fast |"
        )
    mkl_own, parl_default = linear_forward("0"), linear_forward(None)
    rows.append(
        f"| `Linear(256, 256)` forward on 64 rows, parl's MKL setting "
        f"(`prefer_fast_mkl_kernels`) | {parl_default:.1f} µs (baseline MKL's own dispatch, "
        f"`MKL_DEBUG_CPU_TYPE=0`: {mkl_own:.1f} µs; {mkl_own / parl_default:.2f}× faster) "
        "| faster |"
    )
    text = header("parl-core benchmarks") + "\n".join(rows) + "\n"
    print(text)
    (Path(__file__).parent / "results.md").write_text(text)


if __name__ == "__main__":
    main()
