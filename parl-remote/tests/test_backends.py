"""One behaviour suite, run on every backend: a real xparl cluster on 127.0.0.1 and a real local
Ray (started once per session, on 127.0.0.1, stopped at the end).

Every test uses only ``parl.connect(address)`` and the proxy, so what passes here is what a
program gets on either backend by changing the connect call.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import parl
import parl.remote
from parl.remote import (
    ActorDiedError,
    FutureFunctionError,
    FutureGetRepeatedlyError,
    FutureObjectEmpty,
    MemoryLimitError,
    RemoteAttributeError,
    RemoteError,
    RemoteTraceback,
)

import numpy as np
import pytest

from .conftest import gone, wait_for


@pytest.fixture(scope="session")
def local_ray() -> Iterator[str]:
    """A local Ray for the whole session: 4 CPUs and 1 (declared) GPU, bound to 127.0.0.1."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before Ray is imported
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray = pytest.importorskip("ray", reason="the Ray backend's tests need parl-remote[ray]")
    for attempt in range(2):
        try:
            ray.init(num_cpus=4, num_gpus=1, include_dashboard=False, log_to_driver=False)
            break
        except Exception as exc:  # Ray gives its raylet 30 s to start (fixed): slow when loaded
            ray.shutdown()
            if attempt or "timed out during startup" not in str(exc):
                raise
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    yield "ray"
    ray.shutdown()


@pytest.fixture
def on_ray(local_ray: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """This process connected to the local Ray."""
    # A Ray actor's creation includes starting its worker process, which on a loaded 2-core
    # machine takes longer than the suite's 10 s for finding a vacant xparl CPU.
    monkeypatch.setenv("XPARL_RESOURCE_TIMEOUT", "60")
    parl.connect(local_ray)
    yield local_ray
    parl.remote.disconnect()


@pytest.fixture(params=["xparl", "ray"])
def address(request: pytest.FixtureRequest) -> Iterator[str]:
    """The address of a running cluster of each backend; this process is connected to it."""
    if request.param == "ray":
        yield request.getfixturevalue("on_ray")
        return
    where = request.getfixturevalue("shared_cluster").address
    parl.connect(where)
    yield where
    parl.remote.disconnect()


@parl.remote_class
class Counter:
    """An actor with state, a failing method, a method shadowed by an attribute."""

    def __init__(self, start: int = 0) -> None:
        self.count = start
        self.label = "counter"  # shadows the method below, as in plain Python

    def add(self, n: int) -> int:
        self.count += n
        return self.count

    def label(self) -> str:  # type: ignore[no-redef]
        return "the method"

    def scale(self) -> str:
        return "the method"

    def fail(self, message: str) -> None:
        raise ValueError(message)

    def pid(self) -> int:
        return os.getpid()

    def grow(self, mb: int) -> int:
        self.block = bytearray(mb * 2**20)
        for i in range(0, len(self.block), 4096):
            self.block[i] = 1
        time.sleep(10)
        return mb

    def import_answer(self) -> int:
        import parl_shipped_helper  # type: ignore[import-not-found]

        return int(parl_shipped_helper.ANSWER)

    def devices(self) -> str:
        return os.environ.get("CUDA_VISIBLE_DEVICES", "")


def test_calls_and_attributes(address: str) -> None:
    actor = Counter(10)
    assert actor.add(1) == 11
    assert actor.count == 11
    actor.count = 100
    assert actor.add(1) == 101
    with pytest.raises(RemoteAttributeError, match="no_such_thing"):
        _ = actor.no_such_thing
    with pytest.raises(AttributeError):
        actor.no_such_method()
    assert actor.add(0) == 101


def test_instance_attribute_shadows_method(address: str) -> None:
    actor = Counter()
    assert actor.label == "counter"  # set in __init__: wins over the method, as in Python
    assert actor.scale() == "the method"
    actor.scale = 3
    assert actor.scale == 3


def test_remote_exception_is_its_type_and_remote_error(address: str) -> None:
    actor = Counter()
    with pytest.raises(ValueError, match="bad input 42") as info:
        actor.fail("bad input 42")
    assert isinstance(info.value, RemoteError)
    assert "in fail" in info.value.remote_traceback
    assert isinstance(info.value.__cause__, RemoteTraceback)
    with pytest.raises(RemoteError):  # how PARL 2.x code catches it
        actor.fail("again")
    assert actor.add(2) == 2  # the actor survives its exception


def test_constructor_error_reaches_the_caller(address: str) -> None:
    @parl.remote_class
    class Broken:
        def __init__(self) -> None:
            raise KeyError("no config")

    with pytest.raises(KeyError, match="no config") as info:
        Broken()
    assert isinstance(info.value, RemoteError)


def test_future_mode(address: str) -> None:
    @parl.remote_class(wait=False)
    class Slow:
        def __init__(self) -> None:
            self.value = 7

        def sleep(self, seconds: float) -> float:
            time.sleep(seconds)
            return seconds

        def fail(self) -> None:
            raise KeyError("nope")

    actor = Slow()  # returns at once
    first = actor.sleep(1.0)
    assert first.empty()
    with pytest.raises(FutureObjectEmpty):
        first.get_nowait()
    with pytest.raises(FutureObjectEmpty):
        first.get(block=True, timeout=0.01)
    assert first.get(timeout=30) == 1.0
    assert not first.empty()
    with pytest.raises(FutureGetRepeatedlyError):
        first.get()
    failing = actor.fail()
    with pytest.raises(FutureFunctionError) as info:
        failing.get(timeout=30)
    assert isinstance(info.value, KeyError)
    assert actor.value == 7
    futures = [actor.sleep(0.01) for _ in range(5)]
    assert [f.get(timeout=30) for f in futures] == [0.01] * 5


@parl.remote_class(wait=False)
class Shadowing:
    """PARL 2.x's future-mode get/set-attribute actor: attributes named like methods."""

    def __init__(self, arg1: object, arg2: object, arg3: object, arg4: object) -> None:
        time.sleep(0.5)  # the reads below come while the constructor still runs
        self.arg1 = arg1
        self.arg2 = arg2
        self.arg3 = arg3
        self.GLOBAL_CLIENT = arg4

    def arg1(self, x: int, y: int) -> int:  # type: ignore[no-redef]
        return x + y

    def arg5(self) -> int:
        return 100

    def set_new_attr(self) -> None:
        self.new_attr_1 = 200


def test_future_mode_reads_attributes_after_the_constructor(address: str) -> None:
    rng = np.random.default_rng(0)
    arg1, arg2, arg3 = int(rng.integers(100)), float(rng.normal()), rng.normal(size=(3, 3))
    actor = Shadowing(arg1, arg2, arg3, 100)  # returns at once
    assert actor.arg1 == arg1  # set by __init__: the attribute, not the method
    assert actor.arg2 == arg2
    assert (actor.arg3 == arg3).all()
    assert actor.GLOBAL_CLIENT == 100
    assert actor.arg5().get(timeout=30) == 100
    actor.set_new_attr().get(timeout=30)
    assert actor.new_attr_1 == 200


def test_future_mode_sets_attributes_right_after_the_constructor(address: str) -> None:
    arg3 = np.arange(9.0).reshape(3, 3)
    actor = Shadowing(0, 0.0, None, 0)
    actor.arg1 = 3
    actor.arg2 = 3.5
    actor.arg3 = arg3
    actor.GLOBAL_CLIENT = 100
    assert actor.arg1 == 3
    assert actor.arg2 == 3.5
    assert (actor.arg3 == arg3).all()
    assert actor.GLOBAL_CLIENT == 100


def test_future_mode_creation_failure_surfaces_on_the_next_call(address: str) -> None:
    @parl.remote_class(wait=False)
    class BrokenLater:
        def __init__(self) -> None:
            raise RuntimeError("cannot start")

        def work(self) -> int:
            return 1

    actor = BrokenLater()
    with pytest.raises(FutureFunctionError, match="cannot start") as info:
        actor.work().get(timeout=30)
    assert isinstance(info.value, RuntimeError)


def test_destroy_releases_the_actor(address: str) -> None:
    actor = Counter()
    pid = actor.pid()
    actor.destroy()
    with pytest.raises(ActorDiedError):
        actor.add(1)
    actor.destroy()  # again: nothing happens
    wait_for(lambda: gone([pid]), 30, "the destroyed actor's process to exit")


def test_killed_actor_process_is_an_error_at_the_caller(address: str) -> None:
    actor = Counter()
    survivor = Counter()
    pid = actor.pid()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: gone([pid]), 10, "the killed process to exit")
    with pytest.raises(ActorDiedError):
        actor.add(1)
    assert survivor.add(5) == 5  # other actors are not affected


def test_max_memory_stops_the_actor_with_a_clear_error(address: str) -> None:
    @parl.remote_class(max_memory=50)
    class Hungry(Counter._original):  # type: ignore[misc, name-defined]
        pass

    actor = Hungry()
    with pytest.raises(MemoryLimitError, match="max_memory=50"):
        actor.grow(200)
    with pytest.raises(ActorDiedError):
        actor.add(1)


def test_local_modules_reach_the_actors(address: str, tmp_path: Path) -> None:
    helper = tmp_path / "parl_shipped_helper.py"
    helper.write_text("ANSWER = 42\n")
    parl.remote.disconnect()
    parl.connect(address, distributed_files=[str(helper)])
    assert Counter().import_answer() == 42


MARKED_MODULE = """
import os

import parl

# Top-level code: it must run in the actor's process, as in a plain import there.
IMPORTED_IN = os.getpid()
os.environ.setdefault("PARL_TEST_MODULE_MARK", f"set by the import in {IMPORTED_IN}")


@parl.remote_class
class Marked:
    def marks(self):
        return IMPORTED_IN, os.getpid(), os.environ.get("PARL_TEST_MODULE_MARK")
"""


def test_a_shipped_module_is_imported_in_the_actor(
    address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "parl_marked_" + "".join(c for c in tmp_path.name if c.isalnum())
    module_file = tmp_path / f"{name}.py"
    module_file.write_text(MARKED_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PARL_TEST_MODULE_MARK", "the client's")  # the import here keeps it
    module = importlib.import_module(name)
    parl.remote.disconnect()
    parl.connect(address, distributed_files=[str(module_file)])
    imported_in, actor_pid, mark = module.Marked().marks()
    assert imported_in == actor_pid != os.getpid()
    assert mark == f"set by the import in {actor_pid}"


FRAMEWORK_MODULE = """
import parl


class Net(parl.Model):  # resolved by the import in the actor's process
    pass


@parl.remote_class
class Framework:
    def report(self):
        return parl.get_backend(), Net.__mro__[1].__module__
"""


def test_the_actor_runs_on_the_clients_framework(
    address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    # The cluster's processes started with the environment's choice; the client takes the other.
    theirs = os.environ.get("PARL_BACKEND") or parl.get_backend()
    ours = "torch" if theirs == "paddle" else "paddle"
    name = "parl_framework_" + "".join(c for c in tmp_path.name if c.isalnum())
    module_file = tmp_path / f"{name}.py"
    module_file.write_text(FRAMEWORK_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    parl.remote.disconnect()
    parl.connect(address, distributed_files=[str(module_file)])
    monkeypatch.setenv("PARL_BACKEND", ours)
    model_module = {"paddle": "parl.core.paddle.model", "torch": "parl.core.torch.model"}[ours]
    assert module.Framework().report() == (ours, model_module)


def test_n_gpu_reserves_ray_gpus(on_ray: str) -> None:
    @parl.remote_class(n_gpu=1)
    class GpuActor(Counter._original):  # type: ignore[misc, name-defined]
        pass

    assert GpuActor().devices() == "0"


def test_connect_picks_the_backend_by_address() -> None:
    from parl.remote.backends import split_address

    assert split_address(None) == ("xparl", None)
    assert split_address("localhost:8010") == ("xparl", "localhost:8010")
    assert split_address("xparl://10.0.0.1:8010") == ("xparl", "10.0.0.1:8010")
    assert split_address("ray") == ("ray", None)
    assert split_address("ray://head:10001") == ("ray", "ray://head:10001")
    with pytest.raises(ValueError, match="no remote backend for the scheme 'spark'"):
        parl.connect("spark://somewhere:1")
    with pytest.raises(TypeError, match="secret_file"):
        parl.connect("ray", secret_file="/nonexistent")


def test_a_local_ray_with_its_temp_dir_inside_the_virtualenv_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the Ray backend's tests need parl-remote[ray]")
    # Ray's workers die at start when its temp dir is inside the virtualenv (as under nox,
    # whose TMPDIR is the session venv's tmp/): without the check ray.init waits forever.
    venv = tmp_path / "venv"
    (venv / "tmp").mkdir(parents=True)
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "TMPDIR": str(venv / "tmp")}
    env.pop("RAY_TMPDIR", None)
    code = "import parl; parl.connect('ray')"
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode != 0
    assert "ConnectError" in run.stderr and "inside the virtualenv" in run.stderr, run.stderr
    assert "set TMPDIR (or RAY_TMPDIR) to a folder outside" in run.stderr


def test_without_ray_connect_says_what_to_install_and_import_stays_light() -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "import parl, parl.remote\n"
        "assert not [m for m in sys.modules if m.startswith(('ray.', 'zmq'))], 'heavy import'\n"
        "try:\n"
        "    parl.connect('ray')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert 'pip install "parl-remote[ray]"' in out.stdout
