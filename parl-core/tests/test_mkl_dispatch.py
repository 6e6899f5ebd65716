"""parl.core steers paddle's MKL to its fast kernels on AMD CPUs, and only there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from parl.core import prefer_fast_mkl_kernels, slow_mkl_dispatch

import pytest

INTEL = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel Xeon\n"
AMD = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n"


@pytest.fixture
def fresh_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("MKL_DEBUG_CPU_TYPE", raising=False)
    monkeypatch.delitem(sys.modules, "paddle", raising=False)
    return monkeypatch


def test_sets_avx2_dispatch_on_amd(fresh_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
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


def test_slow_dispatch_is_detected_only_on_amd_without_the_variable(
    fresh_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "amd").write_text(AMD)
    (tmp_path / "intel").write_text(INTEL)
    assert slow_mkl_dispatch(tmp_path / "amd")
    assert not slow_mkl_dispatch(tmp_path / "intel")
    fresh_env.setenv("MKL_DEBUG_CPU_TYPE", "0")
    assert not slow_mkl_dispatch(tmp_path / "amd")


def test_paddle_imported_first_on_amd_warns_with_the_fix() -> None:
    code = "import paddle, parl\nparl.Model\n"
    env = {k: v for k, v in os.environ.items() if k != "MKL_DEBUG_CPU_TYPE"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    amd = "AuthenticAMD" in Path("/proc/cpuinfo").read_text()
    assert ("Import parl before paddle" in result.stderr) == amd
