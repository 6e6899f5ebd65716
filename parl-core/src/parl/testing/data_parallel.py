"""Run a data-parallel learner's processes in a test: N Python processes on this machine.

:func:`run_replicas` starts ``python script ARGS`` N times with the variables ``torchrun``
sets (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``) and ``PARL_STORE``, a file in a folder of the
test's where the processes meet (``process_group(init_method="file://" + PARL_STORE)``): no
port to pick, no server. Gloo's own connections go over the loopback interface only. Every
process is waited for within a bound and stopped (by its pid) if it outlives it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["run_replicas"]


def run_replicas(
    script: str | Path, args: list[str], size: int, folder: Path, timeout_s: float = 120.0
) -> None:
    """Run ``size`` processes of ``script`` (ranks 0 … size-1) to the end.

    Raises:
        RuntimeError: a process failed or outlived ``timeout_s``; the message holds the end
            of each failed process's output.
    """
    store = folder / "store"
    env = {**os.environ, "WORLD_SIZE": str(size), "PARL_STORE": str(store)}
    env |= {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    processes = []
    try:
        for rank in range(size):
            log = (folder / f"rank{rank}.log").open("w")
            ranked = {**env, "RANK": str(rank), "LOCAL_RANK": str(rank)}
            command = [sys.executable, str(script), *args]
            processes.append(
                subprocess.Popen(command, env=ranked, stdout=log, stderr=subprocess.STDOUT)
            )
            log.close()
        deadline = time.monotonic() + timeout_s
        codes = [p.wait(max(0.0, deadline - time.monotonic())) for p in processes]
        failed = [rank for rank, code in enumerate(codes) if code != 0]
    except subprocess.TimeoutExpired:
        failed = [rank for rank, p in enumerate(processes) if p.poll() != 0]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(10)
    if failed:
        logs = "\n".join(
            f"--- rank {r}:\n{(folder / f'rank{r}.log').read_text()[-3000:]}" for r in failed
        )
        raise RuntimeError(f"data-parallel processes {failed} failed or timed out:\n{logs}")
