"""``import parl`` stays light, and missing optional parts name what to install."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PARL_BACKEND"} | env
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=environment,
    )


def test_import_parl_imports_no_framework_zmq_or_plugin() -> None:
    result = run_python(
        "import sys, parl\n"
        "assert parl.get_backend() in ('paddle', 'torch')\n"
        "heavy = {'paddle', 'torch', 'zmq', 'gymnasium', 'parl_algos_pg', 'parl_algos_dqn',\n"
        "         'parl.utils'}\n"
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
    result = run_python(
        "import sys, parl\n"
        "assert parl.Model.__name__ == 'Model' and 'paddle' in sys.modules\n"
        "assert issubclass(parl.Model, sys.modules['paddle'].nn.Layer)\n"
        "assert parl.Agent is parl.core.paddle.Agent and 'torch' not in sys.modules\n",
        PARL_BACKEND="paddle",
    )
    assert result.returncode == 0, result.stderr
    import parl

    assert {"Model", "Algorithm", "Agent", "remote_class", "connect"} <= set(dir(parl))


def test_model_without_paddle_names_the_install() -> None:
    result = run_python(
        "import sys\nsys.modules['paddle'] = None\nimport parl\n"
        "try:\n    parl.Model\nexcept ImportError as exc:\n    print(exc)\n",
        PARL_BACKEND="paddle",
    )
    assert result.returncode == 0, result.stderr
    assert "parl.Model needs paddle" in result.stdout
    assert "paddlepaddle" in result.stdout and "paddlepaddle-gpu" in result.stdout


def test_a_family_loads_without_paddle_and_its_network_names_both_paddle_distributions() -> None:
    """An algorithm written once imports no framework; building a network for a missing one is
    the error, and it names what to install."""
    result = run_python(
        "import sys\nsys.modules['paddle'] = None\nimport parl\n"
        "print(parl.algorithms.get('PolicyGradient').__name__)\n"
        "from parl.testing import LinearModel\n"
        "try:\n    LinearModel(4, 2)\nexcept parl.core.errors.BackendError as exc:\n"
        "    print(exc)\n",
        PARL_BACKEND="paddle",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "PolicyGradient"
    assert "paddlepaddle" in result.stdout and "paddlepaddle-gpu" in result.stdout


def test_remote_class_without_parl_remote_names_the_install() -> None:
    result = run_python(
        "import sys\nsys.modules['parl.remote'] = None\nimport parl\n"
        "try:\n    parl.remote_class\nexcept ImportError as exc:\n    print(exc)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "needs the distribution 'parl-remote', which is not installed" in result.stdout
    assert "pip install ./parl-remote" in result.stdout  # nothing is on an index yet


@pytest.mark.parametrize(
    ("module", "distribution"),
    [("parl.utils", "parl-utils"), ("parl.env", "parl-utils"), ("parl.remote", "parl-remote")],
)
def test_importing_a_part_of_a_missing_distribution_names_it(
    module: str, distribution: str
) -> None:
    # Without the distribution its folder is missing from parl's namespace path, as here.
    result = run_python(
        "import parl\n"
        f"parl.__path__[:] = [p for p in parl.__path__ if {distribution!r} not in p]\n"
        f"try:\n    import {module}\nexcept ModuleNotFoundError as exc:\n"
        "    print(exc.name, exc, sep='\\n')\n"
    )
    assert result.returncode == 0, result.stderr
    name, message = result.stdout.strip().splitlines()
    assert name == module
    assert (
        f"{module} comes with the distribution {distribution!r}, which is not installed" in message
    )
    assert f"pip install ./{distribution}" in message


def test_the_missing_distribution_check_leaves_other_imports_alone() -> None:
    result = run_python(
        "import parl, parl.utils, parl.env, parl.remote\n"
        "try:\n    import parl.nothing_here\nexcept ModuleNotFoundError as exc:\n    print(exc)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "No module named 'parl.nothing_here'"


def test_unknown_attribute_is_attribute_error() -> None:
    import parl

    with pytest.raises(AttributeError, match="no attribute 'Modle'"):
        parl.Modle  # noqa: B018
