"""What the ES harness benchmarks share: a real ``xparl start`` cluster, stopped by pid, and a
harness that counts the bytes it sends and receives."""

from __future__ import annotations

import contextlib
import os
import pickle
import tempfile
from collections.abc import Iterator
from typing import Any

from parl.remote.cluster import LocalCluster, recorded_clusters, stop_process

import psutil

from benchmarks.remote.real_workers import free_port, tree, xparl
from parl_algos_es import EvolutionHarness


@contextlib.contextmanager
def xparl_cluster(cpu_num: int) -> Iterator[LocalCluster]:
    """``xparl start --port <free> --cpu_num <cpu_num>`` on 127.0.0.1 (its own ``XPARL_HOME``,
    no monitor); on exit its worker, then its master, and every job left are stopped by pid."""
    with tempfile.TemporaryDirectory(prefix="es-bench-xparl-") as home:
        previous = os.environ.get("XPARL_HOME")
        os.environ["XPARL_HOME"] = home  # the clients of this process find the secret there
        port = free_port()
        xparl("start", "--port", str(port), "--cpu_num", str(cpu_num), "--no-monitor",
              "--host", "127.0.0.1")  # fmt: skip
        cluster = next(c for c in recorded_clusters() if c.port == port)
        try:
            yield cluster
        finally:
            started = tree([cluster.master["pid"], *(w["pid"] for w in cluster.workers)])
            for worker in cluster.workers:
                stop_process(worker)
            stop_process(cluster.master)
            _, alive = psutil.wait_procs(started, timeout=10)
            for proc in alive:  # a job its worker failed to end
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            if previous is None:
                os.environ.pop("XPARL_HOME", None)
            else:
                os.environ["XPARL_HOME"] = previous


class _CountingActor:
    """Forwards ``evaluate`` to a remote actor, counting the pickled size of what goes and
    comes back."""

    def __init__(self, actor: Any, harness: MeasuredHarness) -> None:
        self.actor, self.harness = actor, harness

    def evaluate(self, records: Any, candidates: Any, seeds: Any, solution: Any = None) -> Any:
        h = self.harness
        h.bytes_records += len(pickle.dumps((records, candidates, seeds), protocol=5))
        h.bytes_solution += len(pickle.dumps(solution, protocol=5))
        return _CountingFuture(self.actor.evaluate(records, candidates, seeds, solution), h)


class _CountingFuture:
    def __init__(self, future: Any, harness: MeasuredHarness) -> None:
        self.future, self.harness = future, harness

    def get(self, timeout: float | None = None) -> Any:
        result = self.future.get(timeout=timeout)
        self.harness.bytes_received += len(pickle.dumps(result, protocol=5))
        return result


class MeasuredHarness(EvolutionHarness):
    """The harness, counting the bytes of its calls to actors (pickle protocol 5; the
    transport's own framing not counted): records and episode seeds, the solution broadcast
    (once per actor and generation), and the answers."""

    bytes_records = bytes_solution = bytes_received = 0

    def reset_counts(self) -> None:
        self.bytes_records = self.bytes_solution = self.bytes_received = 0

    def _issue(self, slot: int, batch: Any) -> None:
        actor = self._actors[slot]
        self._actors[slot] = _CountingActor(actor, self)
        try:
            super()._issue(slot, batch)
        finally:
            self._actors[slot] = actor
