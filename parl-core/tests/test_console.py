"""What parl shows on the console when it is what imports paddle: no build-tool warning, no
C++ INFO log lines; a user's own GLOG_minloglevel wins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Exports a model and runs the exported program: paddle's executor logs INFO lines then.
RUN_EXPORTED = """
import parl
import paddle
layer = paddle.nn.Linear(3, 2)
spec = [paddle.static.InputSpec([None, 3], "float32")]
paddle.jit.save(layer, {prefix!r}, input_spec=spec)
paddle.jit.load({prefix!r})(paddle.ones([2, 3]))
print("ran")
"""


def _stderr(prefix: Path, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "GLOG_minloglevel"}
    result = subprocess.run(
        [sys.executable, "-c", RUN_EXPORTED.format(prefix=str(prefix))],
        capture_output=True,
        text=True,
        timeout=180,
        env={**environment, **env},
    )
    assert result.returncode == 0 and "ran" in result.stdout, result.stderr
    return result.stderr


@pytest.mark.slow
def test_paddle_imported_through_parl_is_quiet(tmp_path: Path) -> None:
    stderr = _stderr(tmp_path / "quiet" / "model")
    assert "No ccache found" not in stderr
    assert "pir_interpreter" not in stderr and "New Executor" not in stderr


@pytest.mark.slow
def test_the_users_glog_level_wins(tmp_path: Path) -> None:
    stderr = _stderr(tmp_path / "loud" / "model", GLOG_minloglevel="0")
    assert "New Executor is Running" in stderr
