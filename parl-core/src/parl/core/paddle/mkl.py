"""paddle's set-up that ``import parl`` makes before paddle loads: MKL's fast kernels on AMD
CPUs and a quiet start-up. Importing this module imports no paddle."""

from __future__ import annotations

import ctypes
import os
import sys
import warnings
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
# MKL's code for its AVX2 kernels, as MKL_DEBUG_CPU_TYPE takes and mkl_serv_cpu_detect returns.
MKL_AVX2 = 5


def _amd_cpu(cpuinfo: Path) -> bool:
    try:
        with cpuinfo.open() as handle:
            return any(line.startswith("vendor_id") and "AuthenticAMD" in line for line in handle)
    except OSError:
        return False


def prefer_fast_mkl_kernels(cpuinfo: Path = CPUINFO) -> bool:
    """On AMD CPUs, make the MKL inside paddle's CPU wheel use its AVX2 kernels.

    paddle's CPU wheel computes matmuls with Intel MKL 2019, which picks slow generic kernels on
    non-Intel CPUs; ``MKL_DEBUG_CPU_TYPE=5`` selects its AVX2 kernels instead (2.5× faster
    ``Linear`` layers measured on an AMD EPYC, see ``benchmarks/core``). MKL reads the variable
    at its first computation, not when paddle loads (measured: ``benchmarks/core``), so setting
    it works whether or not paddle is imported yet, as long as paddle has not computed. The
    variable is set only on AMD CPUs and only when the user has not set it
    (``MKL_DEBUG_CPU_TYPE=0`` keeps MKL's own choice).

    Returns:
        Whether the variable was set by this call.
    """
    if "MKL_DEBUG_CPU_TYPE" in os.environ:
        return False
    if _amd_cpu(cpuinfo):
        os.environ["MKL_DEBUG_CPU_TYPE"] = str(MKL_AVX2)
        return True
    return False


def mkl_kernel_type() -> int | None:
    """The CPU type whose kernels paddle's MKL runs (5: AVX2), or ``None`` where unknown.

    Asks MKL itself (its ``mkl_serv_cpu_detect``), which also fixes the choice if MKL has not
    computed yet. ``None`` when paddle is not imported or its wheel ships no MKL.
    """
    paddle = sys.modules.get("paddle")
    library = Path(getattr(paddle, "__file__", "") or "").parent / "libs" / "libmklml_intel.so"
    if paddle is None or not library.is_file():
        return None
    try:
        return int(ctypes.CDLL(str(library)).mkl_serv_cpu_detect())
    except (OSError, AttributeError):
        return None


def slow_mkl_dispatch(cpuinfo: Path = CPUINFO) -> bool:
    """Whether MKL runs generic kernels on an AMD CPU although AVX2 ones were asked for.

    That happens when paddle computed something (its MKL then chose once and for all) before
    ``import parl`` set ``MKL_DEBUG_CPU_TYPE``; :mod:`parl.core.paddle.model` then logs a
    warning that says what to do.
    """
    if os.environ.get("MKL_DEBUG_CPU_TYPE") != str(MKL_AVX2) or not _amd_cpu(cpuinfo):
        return False
    kernels = mkl_kernel_type()
    return kernels is not None and kernels != MKL_AVX2


def quiet_paddle() -> bool:
    """Keep paddle's start-up noise off the console if paddle is not imported yet.

    Hides the "No ccache found" warning that ``import paddle`` emits (about building C++
    extensions, which PARL never does) and sets ``GLOG_minloglevel=1``, which paddle's C++
    logging reads when paddle loads, so that its INFO lines (such as "New Executor is Running"
    when an exported inference model runs) stay off the console; warnings and errors still
    show. A ``GLOG_minloglevel`` the user set is kept.

    Returns:
        Whether paddle was still to be imported (and is now set up to be quiet).
    """
    if "paddle" in sys.modules:
        return False
    os.environ.setdefault("GLOG_minloglevel", "1")
    warnings.filterwarnings(
        "ignore", message="No ccache found", category=UserWarning, module=r"paddle\."
    )
    return True
