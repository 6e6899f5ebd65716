"""``import parl`` stays light, and missing optional parts name what to install."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_import_parl_imports_no_paddle_zmq_or_plugin() -> None:
    result = run_python(
        "import sys, parl\n"
        "heavy = {'paddle', 'zmq', 'gymnasium', 'parl_algos_pg', 'parl_algos_dqn', 'parl.utils'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_listing_algorithms_imports_no_plugin() -> None:
    result = run_python(
        "import sys, parl\n"
        "names = parl.algorithms.names()\n"
        "assert 'PolicyGradient' in names, names\n"
        "print(sorted(m for m in sys.modules if m.startswith('parl_algos') or m == 'paddle'))\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_core_classes_resolve_lazily() -> None:
    import parl

    assert parl.Model.__name__ == "Model"
    assert issubclass(parl.Model, __import__("paddle").nn.Layer)
    assert {"Model", "Algorithm", "Agent", "remote_class", "connect"} <= set(dir(parl))


def test_model_without_paddle_names_the_install() -> None:
    result = run_python(
        "import sys\nsys.modules['paddle'] = None\nimport parl\n"
        "try:\n    parl.Model\nexcept ImportError as exc:\n    print(exc)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "parl.Model needs paddle" in result.stdout
    assert "paddlepaddle" in result.stdout and "paddlepaddle-gpu" in result.stdout


def test_a_family_without_paddle_names_both_paddle_distributions() -> None:
    result = run_python(
        "import sys\nsys.modules['paddle'] = None\nimport parl\n"
        "try:\n    parl.algorithms.get('PolicyGradient')\n"
        "except parl.core.errors.PluginLoadError as exc:\n    print(exc)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "PolicyGradient (entry point PolicyGradient" in result.stdout
    assert "paddlepaddle" in result.stdout and "paddlepaddle-gpu" in result.stdout


def test_remote_class_without_parl_remote_names_the_install() -> None:
    result = run_python(
        "import sys\nsys.modules['parl.remote'] = None\nimport parl\n"
        "try:\n    parl.remote_class\nexcept ImportError as exc:\n    print(exc)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'parl-remote'" in result.stdout


def test_unknown_attribute_is_attribute_error() -> None:
    import parl

    with pytest.raises(AttributeError, match="no attribute 'Modle'"):
        parl.Modle  # noqa: B018
