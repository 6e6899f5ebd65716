"""parl-core figures: `import parl` time, sync_weights_to speed, MKL kernels per import order.

Run: ``python -m benchmarks.core.bench_core`` (writes ``benchmarks/core/results.md``).
"""

from __future__ import annotations

import copy
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._report import header

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


def _parameters_only_sync(source: Any, target: Any, decay: float) -> None:
    """The baseline: PARL 2.x's semantics (parameters only), as fast in-place paddle ops."""
    import paddle

    pairs = zip(source.parameters(), target.parameters(), strict=True)
    with paddle.no_grad():
        for src, dst in pairs:
            if decay == 0.0:
                dst.copy_(src)
            else:
                dst.scale_(decay).add_(src * (1.0 - decay))


def sync_weights(decay: float, calls: int = 2000) -> tuple[float, float]:
    """µs per ``sync_weights_to`` call on a 3-layer 256-wide MLP, and the baseline's.

    The two are timed in alternating rounds (best of 3 each), so that load on a shared machine
    hits both alike.
    """
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
    ours, baseline = float("inf"), float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            source.sync_weights_to(target, decay=decay)
        ours = min(ours, (time.perf_counter() - start) / calls * 1e6)
        start = time.perf_counter()
        for _ in range(calls):
            _parameters_only_sync(source, target, decay)
        baseline = min(baseline, (time.perf_counter() - start) / calls * 1e6)
    return ours, baseline


# The import orders a script can have, and what each leaves MKL running.
IMPORT_ORDERS = {
    "import parl, then paddle": "import parl, paddle",
    "import paddle, then parl (the natural order)": "import paddle, parl",
    "paddle computes before import parl (too late)": (
        "import paddle\npaddle.matmul(paddle.ones([8, 8]), paddle.ones([8, 8]))\nimport parl"
    ),
}

LINEAR_PROBE = """
{imports}
import time
from parl.core.paddle.mkl import mkl_kernel_type
layer, x = paddle.nn.Linear(256, 256), paddle.rand([64, 256])
with paddle.no_grad():
    for _ in range(100):
        layer(x)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(400):
            layer(x)
        best = min(best, (time.perf_counter() - start) / 400 * 1e6)
print(best, mkl_kernel_type())
"""


def linear_forward(imports: str, mkl_debug_cpu_type: str | None) -> tuple[float, str]:
    """µs per ``Linear(256, 256)`` forward on 64 rows (best of 5 × 400) and MKL's kernel type.

    Runs in a fresh process that starts with ``MKL_DEBUG_CPU_TYPE`` unset, or set as given.
    """
    env = {k: v for k, v in os.environ.items() if k != "MKL_DEBUG_CPU_TYPE"}
    if mkl_debug_cpu_type is not None:
        env["MKL_DEBUG_CPU_TYPE"] = mkl_debug_cpu_type
    code = LINEAR_PROBE.format(imports=imports)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    micros, kernels = out.stdout.split()[-2:]
    return float(micros), kernels


def mkl_rows(rounds: int = 3) -> list[str]:
    """Linear-layer speed per import order, against MKL's own dispatch, interleaved rounds."""
    cases: dict[str, tuple[str, str | None]] = {
        "baseline: MKL's own dispatch (`MKL_DEBUG_CPU_TYPE=0`)": ("import parl, paddle", "0")
    }
    cases.update({name: (code, None) for name, code in IMPORT_ORDERS.items()})
    times: dict[str, list[float]] = {name: [] for name in cases}
    kernels: dict[str, str] = {}
    for _ in range(rounds):
        for name, (code, variable) in cases.items():
            micros, kernels[name] = linear_forward(code, variable)
            times[name].append(micros)
    baseline = min(next(iter(times.values())))
    rows = []
    for name, values in times.items():
        best = min(values)
        rows.append(
            f"| `Linear(256, 256)` forward on 64 rows, {name} | {best:.1f} µs, MKL kernel type "
            f"{kernels[name]} ({baseline / best:.2f}× the baseline's speed) | faster |"
        )
    return rows


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
        ours, baseline = sync_weights(decay)
        rows.append(
            f"| `sync_weights_to` (parameters and buffers, checked), 3×256 MLP, decay {decay} "
            f"(best of 3 × 2000 calls) | {ours:.1f} µs/call (baseline, a parameters-only loop "
            f"as PARL 2.x: {baseline:.1f} µs; {ours / baseline:.2f}×) | fast |"
        )
    rows += mkl_rows()
    text = header("parl-core benchmarks") + "\n".join(rows) + "\n"
    print(text)
    (Path(__file__).parent / "results.md").write_text(text)


if __name__ == "__main__":
    main()
