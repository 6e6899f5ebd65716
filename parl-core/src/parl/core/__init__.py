"""The paddle-backed core of PARL: :class:`Model`, :class:`Algorithm`, :class:`Agent`.

Importing a submodule of ``parl.core`` other than :mod:`parl.core.config`,
:mod:`parl.core.errors` and :mod:`parl.core.files` imports paddle. ``import parl`` calls
:func:`prefer_fast_mkl_kernels` first, so that paddle, whenever it loads, finds its MKL set up
for the CPU.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def _amd_cpu(cpuinfo: Path) -> bool:
    try:
        with cpuinfo.open() as handle:
            return any(line.startswith("vendor_id") and "AuthenticAMD" in line for line in handle)
    except OSError:
        return False


def prefer_fast_mkl_kernels(cpuinfo: Path = CPUINFO) -> bool:
    """On AMD CPUs, make the MKL inside paddle's CPU wheel use its AVX2 kernels.

    paddle's CPU wheel computes matmuls with Intel MKL, which picks slow generic kernels on
    non-Intel CPUs; ``MKL_DEBUG_CPU_TYPE=5`` selects its AVX2 kernels instead (2.4× faster
    ``Linear`` layers measured on an AMD EPYC, see ``benchmarks/core``). The variable is set
    only on AMD CPUs, only when paddle is not imported yet (MKL reads it once, when it loads:
    ``import parl`` before ``import paddle`` to benefit) and only when the user has not set it
    (``MKL_DEBUG_CPU_TYPE=0`` keeps MKL's own choice).

    Returns:
        Whether the variable was set by this call.
    """
    if "paddle" in sys.modules or "MKL_DEBUG_CPU_TYPE" in os.environ:
        return False
    if _amd_cpu(cpuinfo):
        os.environ["MKL_DEBUG_CPU_TYPE"] = "5"
        return True
    return False


def slow_mkl_dispatch(cpuinfo: Path = CPUINFO) -> bool:
    """Whether paddle loaded on an AMD CPU with MKL left on its slow generic kernels.

    That happens when ``import paddle`` ran before ``import parl`` and the user did not set
    ``MKL_DEBUG_CPU_TYPE``; :mod:`parl.core.model` then logs a warning that says what to do.
    """
    return "MKL_DEBUG_CPU_TYPE" not in os.environ and _amd_cpu(cpuinfo)
