"""parl.core steers paddle's MKL to its fast kernels on AMD CPUs, whatever the import order.

MKL reads ``MKL_DEBUG_CPU_TYPE`` at its first computation, not when paddle loads (measured with
``benchmarks/core/bench_core.py``), so ``import paddle`` before ``import parl`` still gets the
fast kernels; only a computation before ``import parl`` is too late, and then parl says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from parl.core.paddle.mkl import (
    MKL_AVX2,
    mkl_kernel_type,
    prefer_fast_mkl_kernels,
    slow_mkl_dispatch,
)

import pytest

INTEL = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel Xeon\n"
AMD = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n"


AMD_HOST = "AuthenticAMD" in Path("/proc/cpuinfo").read_text()


@pytest.fixture
def fresh_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("MKL_DEBUG_CPU_TYPE", raising=False)
    return monkeypatch


def test_sets_avx2_dispatch_on_amd_even_with_paddle_imported(
    fresh_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import paddle  # noqa: F401

    (tmp_path / "cpuinfo").write_text(AMD)
    assert prefer_fast_mkl_kernels(tmp_path / "cpuinfo")
    assert os.environ["MKL_DEBUG_CPU_TYPE"] == "5"


def test_leaves_intel_alone(fresh_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text(INTEL)
    assert not prefer_fast_mkl_kernels(tmp_path / "cpuinfo")
    assert "MKL_DEBUG_CPU_TYPE" not in os.environ


def test_user_setting_wins(fresh_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text(AMD)
    fresh_env.setenv("MKL_DEBUG_CPU_TYPE", "0")
    assert not prefer_fast_mkl_kernels(tmp_path / "cpuinfo")
    assert os.environ["MKL_DEBUG_CPU_TYPE"] == "0"


def test_missing_cpuinfo_changes_nothing(fresh_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert not prefer_fast_mkl_kernels(tmp_path / "absent")


def test_import_parl_sets_it_before_paddle_loads() -> None:
    code = (
        "import os, sys, parl\n"
        "amd = 'AuthenticAMD' in open('/proc/cpuinfo').read()\n"
        "expected = '5' if amd else None\n"
        "print('paddle' in sys.modules, os.environ.get('MKL_DEBUG_CPU_TYPE') == expected)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MKL_DEBUG_CPU_TYPE"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]


def test_slow_dispatch_needs_an_amd_cpu_and_the_variable_parl_sets(
    fresh_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "amd").write_text(AMD)
    (tmp_path / "intel").write_text(INTEL)
    assert not slow_mkl_dispatch(tmp_path / "amd")  # the user's MKL choice: nothing asked
    fresh_env.setenv("MKL_DEBUG_CPU_TYPE", "0")
    assert not slow_mkl_dispatch(tmp_path / "amd")
    fresh_env.setenv("MKL_DEBUG_CPU_TYPE", "5")
    assert not slow_mkl_dispatch(tmp_path / "intel")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MKL_DEBUG_CPU_TYPE"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    return result


def test_paddle_imported_before_parl_still_gets_the_fast_kernels() -> None:
    result = _run(
        "import os, paddle, parl\n"
        "from parl.core.paddle.mkl import mkl_kernel_type\n"
        "parl.Model\n"
        "print(os.environ.get('MKL_DEBUG_CPU_TYPE'), mkl_kernel_type())\n"
    )
    variable, kernels = result.stdout.split()[-2:]
    if AMD_HOST:
        assert (variable, kernels) == ("5", str(MKL_AVX2))
    else:
        assert variable == "None"
    assert "MKL" not in result.stderr


def test_computing_before_import_parl_is_too_late_and_says_what_to_do() -> None:
    result = _run(
        "import paddle\n"
        "paddle.matmul(paddle.ones([64, 64]), paddle.ones([64, 64]))\n"
        "import parl\n"
        "parl.Model\n"
    )
    warnings = result.stderr.count("Import parl before paddle's first computation")
    assert warnings == int(AMD_HOST), result.stderr


def test_kernel_type_is_unknown_without_paddle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "paddle", None)
    assert mkl_kernel_type() is None
