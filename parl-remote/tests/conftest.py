"""Fixtures: real xparl clusters on 127.0.0.1 with short timeouts, stopped after each use."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

FAST_ENV = {
    "XPARL_HEARTBEAT_INTERVAL": "0.1",
    "XPARL_HEARTBEAT_TIMEOUT": "2.5",
    "XPARL_CONNECT_TIMEOUT": "3",
    "XPARL_RESOURCE_TIMEOUT": "10",
    "XPARL_MEMORY_CHECK_INTERVAL": "0.05",
    "XPARL_HOST": "127.0.0.1",
}


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> object:
    """Poll ``predicate`` until it returns a truthy value; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def tree(cluster: object) -> list[psutil.Process]:
    """The processes of a cluster: its master and workers and their jobs."""
    found = []
    for record in cluster.processes():  # type: ignore[attr-defined]
        try:
            proc = psutil.Process(record["pid"])
            found += [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return found


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive


def stop_and_check(cluster: object, timeout: float = 5.0) -> None:
    """Stop a cluster and check every one of its processes is gone (no leftovers)."""
    procs = tree(cluster)
    cluster.stop()  # type: ignore[attr-defined]
    wait_for(lambda: not _alive(procs), timeout, "the cluster's processes to exit")


@pytest.fixture(scope="session", autouse=True)
def _seed_and_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    random.seed(0)
    home = tmp_path_factory.mktemp("xparl_home")
    saved = {k: os.environ.get(k) for k in [*FAST_ENV, "XPARL_HOME"]}
    os.environ.update(FAST_ENV)
    os.environ["XPARL_HOME"] = str(home)
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def start_cluster() -> Iterator[Callable[..., object]]:
    """Factory of clusters; every cluster (and the client) is stopped at teardown."""
    from parl.remote import disconnect
    from parl.remote.cluster import LocalCluster

    started: list[LocalCluster] = []

    def start(cpu_num: int = 2, **kwargs: object) -> LocalCluster:
        cluster = LocalCluster.start(cpu_num, **kwargs)
        started.append(cluster)
        return cluster

    yield start
    disconnect()
    for cluster in started:
        stop_and_check(cluster)


@pytest.fixture(scope="module")
def shared_cluster() -> Iterator[object]:
    """One 4-CPU cluster for the happy-path tests of a module."""
    from parl.remote import disconnect
    from parl.remote.cluster import LocalCluster

    cluster = LocalCluster.start(4)
    yield cluster
    disconnect()
    stop_and_check(cluster)


@pytest.fixture
def connected(shared_cluster: object) -> Iterator[object]:
    """A client connected to the shared cluster."""
    import parl.remote

    client = parl.remote.connect(shared_cluster.address)  # type: ignore[attr-defined]
    yield client
    parl.remote.disconnect()
    wait_for(
        lambda: shared_cluster.wait_for_jobs(0, 5)["cpus_used"] == 0,  # type: ignore[attr-defined]
        5,
        "the actors' CPUs to return to the pool",
    )
