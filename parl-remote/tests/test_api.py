"""The decorator, connect's argument checks, serialization and file collection (no cluster)."""

from __future__ import annotations

import linecache
import os
import subprocess
import sys
import threading
import traceback
import types
from pathlib import Path

import parl
import parl.remote
from parl.remote import ConnectError, SerializeError
from parl.remote.files import collect_files
from parl.remote.serialization import dumps, loads

import numpy as np
import pytest


class Plain:
    def add(self, a: int, b: int) -> int:
        return a + b


def test_decorator_forms_and_errors() -> None:
    bare = parl.remote_class(Plain)
    assert bare._original is Plain
    configured = parl.remote_class(max_memory=100, wait=False, n_gpu=0)(Plain)
    assert configured._original is Plain and configured.__name__ == "Plain"
    with pytest.raises(TypeError, match="unknown option.*'max_mem'.*allowed"):
        parl.remote_class(max_mem=10)
    with pytest.raises(TypeError, match="classes only"):
        parl.remote_class(lambda: None)
    with pytest.raises(ValueError, match="max_memory=-1"):
        parl.remote_class(max_memory=-1)
    with pytest.raises(ValueError, match="n_gpu='1'"):
        parl.remote_class(n_gpu="1")
    with pytest.raises(ValueError, match="wait=1"):
        parl.remote_class(wait=1)


def test_inside_a_job_the_plain_class_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XPARL", "True")
    assert parl.remote_class(Plain) is Plain


def test_creating_an_actor_without_connect_says_how_to_fix() -> None:
    parl.remote.disconnect()
    with pytest.raises(ConnectError, match=r"parl.connect"):
        parl.remote_class(Plain)()


def test_connect_argument_errors() -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        parl.connect("localhost")
    with pytest.raises(TypeError, match="wrap it in a list"):
        parl.connect("127.0.0.1:1", distributed_files="x.py")
    with pytest.raises(ValueError, match="cpu_num applies only"):
        parl.connect("127.0.0.1:1", cpu_num=2)
    with pytest.raises(ValueError, match="connect_timeout"):
        parl.connect("127.0.0.1:1", connect_timeout=0)


def test_serialization_sends_arrays_out_of_band() -> None:
    array = np.arange(1 << 20, dtype=np.float32)
    frames = dumps({"a": array, "small": np.ones(3)})
    assert len(frames) == 2 and len(frames[0]) < 1024
    back = loads(frames)
    np.testing.assert_array_equal(back["a"], array)
    with pytest.raises(SerializeError, match="cannot pickle the lock"):
        dumps(threading.Lock(), "the lock")


def test_a_class_sent_by_value_keeps_its_source_lines_in_tracebacks(tmp_path: Path) -> None:
    # A module the other side cannot import (a script's, a test's) travels by value; its code
    # must keep its file name so that a traceback over there still shows the failing line.
    source = tmp_path / "script.py"
    source.write_text("class Faulty:\n    def explode(self):\n        raise ValueError('boom')\n")
    module = types.ModuleType("a_script_module")
    exec(compile(source.read_text(), str(source), "exec"), module.__dict__)
    linecache.clearcache()
    rebuilt = loads(dumps(module.Faulty))
    with pytest.raises(ValueError) as raised:
        rebuilt().explode()
    text = "".join(traceback.format_exception(raised.value))
    assert f'File "{source}", line 3, in explode' in text
    assert "raise ValueError('boom')" in text


def test_collect_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    (project / "pkg" / "sub" / "deeper").mkdir(parents=True)
    (project / "notpkg").mkdir()
    (project / "main.py").write_text("x = 1")
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "sub" / "__init__.py").write_text("")
    (project / "pkg" / "sub" / "deeper" / "__init__.py").write_text("")
    (project / "pkg" / "sub" / "deeper" / "mod.py").write_text("VALUE = 3")
    (project / "notpkg" / "data.txt").write_text("data")
    (project / "notpkg" / "a.csv").write_text("1,2")
    monkeypatch.chdir(project)
    files = collect_files(None, base=project)
    assert {"main.py", "pkg/sub/deeper/mod.py", "pkg/__init__.py"} <= set(files)
    assert "notpkg/data.txt" not in files
    files = collect_files(["notpkg/*.txt", "notpkg"], base=project)
    assert files["notpkg/data.txt"] == b"data" and "notpkg/a.csv" in files
    absolute = collect_files([str(project / "notpkg")], base=None)
    assert set(absolute) == {"notpkg/data.txt", "notpkg/a.csv"}
    with pytest.raises(ValueError, match="matches no file"):
        collect_files(["missing/*.py"], base=None)


def test_import_parl_is_light() -> None:
    code = (
        "import sys, parl; bad = [m for m in ('zmq', 'paddle', 'parl.remote') "
        "if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ), timeout=60)
