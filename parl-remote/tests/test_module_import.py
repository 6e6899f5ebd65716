"""How an actor's class travels: a class of a shipped or installed module by reference (the
actor's process imports the module, so its top-level code runs there), a class of ``__main__``
or of a module the process cannot import by value; and the process imports only from its own
client's files or from installed packages.

The semantics on every backend are in ``test_backends.py``
(``test_a_shipped_module_is_imported_in_the_actor``); these are the decisions themselves, the
``__main__`` case on a real cluster, and the refusals.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import parl
import parl.remote
from parl.remote import ConnectError, DeserializeError
from parl.remote.client import get_client, get_global_client
from parl.remote.config import Timeouts
from parl.remote.serialization import ClassReference, dumps, load_class, loads, pickle_class

import pytest

from .conftest import wait_for

MODULE = """
import os

MARK = os.getpid()


class Plain:
    def mark(self):
        return MARK


def make_local():
    class Local:
        pass

    return Local
"""


@pytest.fixture
def plain_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A module of the test's own folder (neither installed nor shipped unless said so)."""
    name = "parl_plain_" + "".join(c for c in tmp_path.name if c.isalnum())
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    yield module
    sys.modules.pop(name, None)


def test_a_class_of_a_shipped_module_travels_by_reference(plain_module: Any) -> None:
    shipped = {f"{plain_module.__name__}.py"}
    sent = loads(pickle_class(plain_module.Plain, shipped))
    assert sent == ClassReference(plain_module.__name__, "Plain")


def test_a_class_of_an_installed_module_travels_by_reference() -> None:
    # parl-remote is installed (editable here: its folder comes from a .pth file)
    frames = pickle_class(Timeouts, set())
    assert loads(frames) == ClassReference("parl.remote.config", "Timeouts")
    assert load_class(frames, "Timeouts", None) is Timeouts


def _load_elsewhere(frames: list[Any], expression: str) -> str:
    """Unpickle ``frames`` in a fresh interpreter that cannot import the test's modules and
    print ``expression`` of the class ``cls``."""
    code = f"import pickle, sys\ncls = pickle.loads(sys.stdin.buffer.read())\nprint({expression})"
    done = subprocess.run(
        [sys.executable, "-c", code], input=bytes(frames[0]), capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().strip()


def test_classes_the_actor_cannot_import_travel_by_value(plain_module: Any) -> None:
    frames = pickle_class(plain_module.Plain, set())  # neither shipped nor installed
    assert _load_elsewhere(frames, "cls().mark()") == str(os.getpid())  # the value here, taken
    local = plain_module.make_local()  # not reachable by its qualified name
    frames = pickle_class(local, {f"{plain_module.__name__}.py"})
    assert isinstance(loads(frames), type)
    assert _load_elsewhere(frames, "cls.__name__") == "Local"


def test_a_class_made_by_exec_in_a_bare_namespace_travels_by_value(shared_cluster: Any) -> None:
    # exec() without __name__ names the class's module "builtins" (a documentation page's
    # blocks run that way): nothing of that module may be pickled with it.
    namespace: dict[str, Any] = {"parl": parl}
    exec(
        "@parl.remote_class\nclass Squarer:\n    def square(self, x):\n        return x * x\n",
        namespace,
    )
    assert namespace["Squarer"]._original.__module__ == "builtins"
    parl.connect(shared_cluster.address)
    try:
        assert namespace["Squarer"]().square(3) == 9
    finally:
        parl.remote.disconnect()


def test_classes_travel_by_value_from_several_threads_at_once(plain_module: Any) -> None:
    # cloudpickle's by-value registration is global: unguarded, one thread's unregister broke
    # another's pickle (ValueError: ... is not registered for pickle by value).
    errors: list[BaseException] = []

    def pickle_many() -> None:
        try:
            for _ in range(200):
                pickle_class(plain_module.Plain, set())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=pickle_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and not any(thread.is_alive() for thread in threads)


def test_the_proxy_in_the_module_stands_for_its_class(plain_module: Any) -> None:
    proxy = parl.remote_class(plain_module.Plain)
    plain_module.Plain = proxy  # what the decorator leaves under the class's name
    sent = loads(pickle_class(proxy._original, {f"{plain_module.__name__}.py"}))
    assert sent == ClassReference(plain_module.__name__, "Plain")


def test_load_class_imports_only_from_the_shipped_folder_or_installed_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stray = tmp_path / "elsewhere"
    stray.mkdir()
    marker = tmp_path / "imported"
    (stray / "parl_stray_module.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nclass Stray:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(stray))
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    frames = dumps(ClassReference("parl_stray_module", "Stray"))
    with pytest.raises(DeserializeError, match="refusing to import .*parl_stray_module"):
        load_class(frames, "Stray", shipped)
    assert not marker.exists() and "parl_stray_module" not in sys.modules
    (shipped / "parl_stray_module.py").write_text("class Stray:\n    pass\n")
    monkeypatch.syspath_prepend(str(shipped))
    try:
        assert load_class(frames, "Stray", shipped).__name__ == "Stray"
    finally:
        sys.modules.pop("parl_stray_module", None)
    assert not marker.exists()


def test_load_class_names_what_went_wrong(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = dumps(ClassReference("parl_no_such_module", "X"))
    with pytest.raises(DeserializeError, match="cannot import .*ship it .* or install it"):
        load_class(missing, "X", tmp_path)
    (tmp_path / "parl_failing_module.py").write_text("raise RuntimeError('top-level failed')\n")
    (tmp_path / "parl_other_module.py").write_text("class Other:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(DeserializeError, match="RuntimeError: top-level failed"):
            load_class(dumps(ClassReference("parl_failing_module", "X")), "X", tmp_path)
        with pytest.raises(DeserializeError, match="has no class Missing"):
            load_class(dumps(ClassReference("parl_other_module", "Missing")), "Missing", tmp_path)
    finally:
        for name in ("parl_failing_module", "parl_other_module"):
            sys.modules.pop(name, None)
    with pytest.raises(DeserializeError, match="expected a class, got int"):
        load_class(dumps(3), "three", tmp_path)


MAIN_SCRIPT = """
import os
import sys

import parl

MARK = os.getpid()


@parl.remote_class
class Local:
    def marks(self):
        return MARK, os.getpid()


if __name__ == "__main__":
    parl.connect(sys.argv[1])
    mark, actor_pid = Local().marks()
    print("RESULT", mark == os.getpid(), actor_pid != os.getpid(), flush=True)
"""


def test_a_class_of_main_travels_by_value(
    shared_cluster: Any, tmp_path: Path, scripts: Callable[..., Any]
) -> None:
    # The script's folder is shipped, the script with it; its class still goes by value (the
    # job never runs the script, whose top level would connect again).
    script = tmp_path / "main_actor.py"
    script.write_text(MAIN_SCRIPT)
    run = scripts(script, shared_cluster.address)
    assert run.finish(timeout=60) == "RESULT True True", run.lines


def test_the_job_refuses_a_module_from_elsewhere_on_its_path(
    start_cluster: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder on the jobs' sys.path (PYTHONPATH) that is neither shipped nor installed.
    stray = tmp_path / "elsewhere"
    stray.mkdir()
    marker = tmp_path / "imported"
    (stray / "parl_stray_job_module.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nclass Stray:\n    pass\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(stray))
    cluster = start_cluster(1)
    monkeypatch.delenv("PYTHONPATH")
    client = parl.connect(cluster.address)
    reference = dumps(ClassReference("parl_stray_job_module", "Stray"))
    with pytest.raises(DeserializeError, match="refusing to import"):
        client.create_actor(reference, "Stray", (), {}, 0, None)
    assert not marker.exists()
    wait_for(lambda: cluster.query()["cpus_used"] == 0, 10, "the job's CPU to return")


def test_get_global_client_is_the_process_client(shared_cluster: Any) -> None:
    parl.remote.disconnect()
    with pytest.raises(ConnectError, match="parl.connect"):
        get_global_client()
    client = parl.connect(shared_cluster.address)
    try:
        assert get_global_client() is client is get_client()
        # A forked child gets a client of its own, on the same cluster (PARL 2.x's contract).
        context = multiprocessing.get_context("fork")
        answers = context.Queue()
        child = context.Process(target=_report_client, args=(answers,))
        child.start()
        try:
            assert answers.get(timeout=60) == (True, client.address)
        finally:
            child.join(30)
            if child.is_alive():
                child.kill()
        assert child.exitcode == 0
    finally:
        parl.remote.disconnect()


def _report_client(answers: Any) -> None:
    client = get_global_client()
    answers.put((client.pid == os.getpid(), client.address))
    parl.remote.disconnect()
