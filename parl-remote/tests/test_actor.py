"""Happy paths and recoverable errors of actors on a real cluster."""

from __future__ import annotations

import os
import threading
import time

import parl
from parl.remote import (
    DeserializeError,
    RemoteAttributeError,
    RemoteError,
    RemoteTraceback,
    SerializeError,
)
from parl.remote.client import ActorChannel

import numpy as np
import psutil
import pytest

from .conftest import wait_for


class Unpicklable(Exception):
    """An exception whose constructor needs two arguments: it pickles but cannot unpickle."""

    def __init__(self, a: int, b: int) -> None:
        super().__init__(f"{a}-{b}")


@parl.remote_class
class Calculator:
    """A plain actor."""

    def __init__(self, offset: int = 0) -> None:
        self.offset = offset
        self.history: list[int] = []

    def add(self, a: int, b: int) -> int:
        self.history.append(a + b)
        return a + b + self.offset

    def echo(self, value: object) -> object:
        return value

    def fail(self, message: str) -> None:
        raise ValueError(message)

    def fail_unpicklable(self) -> None:
        raise Unpicklable(1, 2)

    def give_lock(self) -> object:
        return threading.Lock()

    def environment(self, name: str) -> str | None:
        return os.environ.get(name)

    def spin(self, n: int) -> int:
        total = 0
        for i in range(n):
            total += i % 7
        return total

    def sleep(self, seconds: float) -> float:
        time.sleep(seconds)
        return seconds


def test_call_runs_in_another_process(connected: object) -> None:
    actor = Calculator(10)
    assert actor.add(1, 2) == 13
    assert actor.environment("XPARL") == "True"
    assert actor.environment("CUDA_VISIBLE_DEVICES") == ""
    assert Calculator._original.__name__ == "Calculator"
    assert "job" in repr(actor)


def test_attributes_get_and_set(connected: object) -> None:
    actor = Calculator(1)
    actor.add(2, 3)
    assert actor.offset == 1
    assert actor.history == [5]
    actor.offset = 100
    assert actor.add(0, 0) == 100
    with pytest.raises(RemoteAttributeError, match="no_such_thing"):
        _ = actor.no_such_thing
    with pytest.raises(AttributeError):
        actor.missing_method()
    assert actor.add(1, 1) == 102


def test_exception_keeps_type_and_remote_traceback(connected: object) -> None:
    actor = Calculator()
    with pytest.raises(ValueError, match="bad input 42") as info:
        actor.fail("bad input 42")
    assert isinstance(info.value.__cause__, RemoteTraceback)
    assert "in fail" in info.value.__cause__.traceback_text
    assert actor.add(2, 2) == 4  # the actor survives its exception
    with pytest.raises(RemoteError, match="Unpicklable") as info2:
        actor.fail_unpicklable()
    assert "1-2" in str(info2.value)
    assert actor.add(3, 3) == 6


def test_unpicklable_arguments_and_results(connected: object) -> None:
    actor = Calculator()
    with pytest.raises(SerializeError, match="arguments of `echo`"):
        actor.echo(threading.Lock())
    with pytest.raises(SerializeError, match="return value of `give_lock`"):
        actor.give_lock()
    with pytest.raises(SerializeError):
        actor.offset = threading.Lock()
    assert actor.add(1, 1) == 2


def test_arguments_that_fail_to_unpickle_remotely(connected: object) -> None:
    class BadState:
        def __reduce__(self) -> tuple:
            return (int, ("not a number",))

    actor = Calculator()
    with pytest.raises(DeserializeError):
        actor.echo(BadState())
    assert actor.add(1, 2) == 3


def test_a_failed_constructor_job_waits_for_its_client_then_ends(
    connected: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exiting right behind the error reply can close the connection before the client read
    the reply (it then saw a bare death): the job stays until released, or ends on its own."""

    @parl.remote_class
    class Broken:
        def __init__(self) -> None:
            raise KeyError("no config")

    close = ActorChannel.close
    kept: list[ActorChannel] = []
    monkeypatch.setattr(ActorChannel, "close", lambda self, **_: kept.append(self))
    with pytest.raises(KeyError, match="no config"):
        Broken()
    (channel,) = kept
    assert channel.pid is not None
    job = psutil.Process(channel.pid)
    with pytest.raises(psutil.TimeoutExpired):
        job.wait(timeout=1.0)  # answered, and still there for its client
    job.wait(timeout=2.5 + 15)  # never released: it ends after the heartbeat timeout
    close(channel)


@pytest.mark.parametrize("size", [256, 256 * 1024, 4 * 2**20])
def test_arrays_round_trip(connected: object, size: int) -> None:
    actor = Calculator()
    rng = np.random.default_rng(0)
    array = rng.standard_normal(size).astype(np.float32)
    back = actor.echo({"x": array, "y": [array[:10], 3]})
    np.testing.assert_array_equal(back["x"], array)
    assert back["x"].dtype == np.float32
    assert back["x"].flags.writeable
    back["x"][0] = 1.0  # writable, no copy needed


def test_gil_demo_runs_actors_in_parallel(connected: object) -> None:
    actors = [Calculator() for _ in range(4)]
    results: list[int] = [0] * 4

    def drive(i: int) -> None:
        results[i] = actors[i].spin(20000)

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    expected = sum(i % 7 for i in range(20000))
    assert results == [expected] * 4


def test_release_returns_cpu_fast(connected: object, shared_cluster: object) -> None:
    actors = [Calculator() for _ in range(4)]
    assert shared_cluster.wait_for_jobs(0, 5)["cpus_vacant"] == 0  # type: ignore[attr-defined]
    del actors[0]
    start = time.monotonic()
    wait_for(
        lambda: shared_cluster.wait_for_jobs(0, 5)["cpus_vacant"] == 1,  # type: ignore[attr-defined]
        1.0,
        "the released CPU",
    )
    assert time.monotonic() - start < 1.0
    replacement = Calculator()
    assert replacement.add(1, 1) == 2


def test_too_many_actors_wait_then_fail(connected: object, shared_cluster: object) -> None:
    client = parl.remote.get_client()
    actors = [Calculator() for _ in range(4)]
    client.timeouts = type(client.timeouts)(resource_timeout=0.5)
    try:
        start = time.monotonic()
        with pytest.raises(parl.remote.ResourceError, match="vacant"):
            Calculator()
        assert 0.4 < time.monotonic() - start < 5
        holder: list[object] = []
        waiter = threading.Thread(target=lambda: holder.append(Calculator()))
        client.timeouts = type(client.timeouts)(resource_timeout=10)
        waiter.start()
        actors.pop()
        waiter.join(timeout=10)
        assert holder and holder[0].add(2, 2) == 4  # type: ignore[attr-defined]
    finally:
        del actors


def test_n_gpu_sets_cuda_visible_devices(start_cluster: object) -> None:
    cluster = start_cluster(1, gpus="0,1")  # type: ignore[operator]
    parl.remote.connect(cluster.address)

    @parl.remote_class(n_gpu=1)
    class GpuActor:
        def devices(self) -> str:
            return os.environ["CUDA_VISIBLE_DEVICES"]

    @parl.remote_class(n_gpu=3)
    class Greedy:
        pass

    first, second = GpuActor(), GpuActor()
    assert sorted([first.devices(), second.devices()]) == ["0", "1"]
    cpu_actor = Calculator()
    assert cpu_actor.environment("CUDA_VISIBLE_DEVICES") == ""
    with pytest.raises(parl.remote.ResourceError, match="n_gpu=3"):
        Greedy()
    status = cluster.wait_for_jobs(0, 5)
    assert status["gpus_used"] == 2 and status["cpus_used"] == 1
    del first
    wait_for(lambda: cluster.wait_for_jobs(0, 5)["gpus_used"] == 1, 2, "the GPU to return")


def test_max_memory_kills_actor_with_clear_error(connected: object) -> None:
    @parl.remote_class(max_memory=50)
    class Hungry:
        def grow(self, mb: int, hold: float) -> int:
            self.block = bytearray(mb * 2**20)
            for i in range(0, len(self.block), 4096):
                self.block[i] = 1
            time.sleep(hold)
            return mb

    actor = Hungry()
    assert actor.grow(1, 0) == 1
    start = time.monotonic()
    with pytest.raises(parl.remote.MemoryLimitError, match="max_memory=50"):
        actor.grow(200, 5)
    assert time.monotonic() - start < 5
    assert Calculator().add(1, 1) == 2
