"""Backend selection: ``PARL_BACKEND``, else the one framework installed, else a clear error.

Each case runs in a fresh interpreter, with frameworks hidden by ``sys.modules[name] = None``
(``importlib.util.find_spec`` then reports them missing, as on a machine without them).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def run_python(code: str, hide: tuple[str, ...] = (), **env: str) -> str:
    hidden = "".join(f"sys.modules[{name!r}] = None\n" for name in hide)
    environment = {k: v for k, v in os.environ.items() if k != "PARL_BACKEND"} | env
    result = subprocess.run(
        [sys.executable, "-c", f"import sys\n{hidden}import parl\n{code}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.parametrize(
    ("hide", "env", "expected"),
    [
        ((), {"PARL_BACKEND": "paddle"}, "paddle"),
        ((), {"PARL_BACKEND": " Torch "}, "torch"),
        (("torch",), {}, "paddle"),
        pytest.param(("paddle",), {}, "torch", marks=pytest.mark.torch),
        (("paddle", "torch"), {"PARL_BACKEND": "torch"}, "torch"),  # says; importing fails
    ],
)
def test_backend_is_the_setting_else_the_framework_installed(hide, env, expected) -> None:
    assert run_python("print(parl.get_backend())", hide, **env) == expected


@pytest.mark.torch
def test_paddle_is_preferred_when_both_are_installed() -> None:
    pytest.importorskip("torch")
    assert run_python("print(parl.get_backend())") == "paddle"


def test_no_framework_is_one_error_naming_both_installs() -> None:
    code = (
        "try:\n    parl.Model\nexcept ImportError as exc:\n    print(type(exc).__name__, exc)\n"
        "print(parl.algorithms.names() == sorted(parl.algorithms.names()))\n"
    )
    out = run_python(code, ("paddle", "torch"))
    assert out.startswith("BackendError PARL needs paddle or torch, and neither is installed")
    assert "pip install paddlepaddle" in out and "paddlepaddle-gpu" in out
    assert "pip install torch" in out and "parl-core[torch]" in out
    assert out.endswith("True")  # listing reads metadata only and still works


def test_an_unknown_setting_names_the_choices() -> None:
    code = "try:\n    parl.get_backend()\nexcept ImportError as exc:\n    print(exc)\n"
    out = run_python(code, PARL_BACKEND="tensorflow")
    assert "PARL_BACKEND='tensorflow' is not a PARL backend" in out
    assert "paddle, torch" in out


def test_the_selected_framework_missing_is_named() -> None:
    code = "try:\n    parl.Agent\nexcept ImportError as exc:\n    print(exc)\n"
    out = run_python(code, ("torch",), PARL_BACKEND="torch")
    assert out.startswith("parl.Agent needs torch, which is not installed")
    assert "pip install torch" in out
