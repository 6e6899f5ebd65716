"""``parl.connect()`` without an address, in a fresh process without paddle, shipping the user's
modules (a nested package and a module defining the actor) to the jobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

from .conftest import wait_for

SCRIPT = """
import json, os, sys, threading
sys.modules["paddle"] = None  # paddle is absent: importing it fails
import parl
from actors import Worker

@parl.remote_class(wait=False)
class Spinner:
    def spin(self, n):
        total = 0
        for i in range(n):
            total += i % 3
        return total

client = parl.connect(cpu_num=6, distributed_files=["data"])
worker = Worker()
results = {"deep": worker.deep(), "data": worker.read("data/table.csv"), "env": worker.env()}
spinners = [Spinner() for _ in range(5)]
futures = [s.spin(10000) for s in spinners]
results["spins"] = [f.get(timeout=30) for f in futures]
results["paddle_here"] = any(m == "paddle" or m.startswith("paddle.") for m in sys.modules
                             if sys.modules[m] is not None)
results["pids"] = [r["pid"] for r in client.cluster.processes()]
print(json.dumps(results), flush=True)
"""

ACTORS = """
import os, sys
import parl
from tools.math.deep import triple

@parl.remote_class
class Worker:
    def deep(self):
        return triple(3)

    def read(self, path):
        with open(path) as handle:
            return handle.read()

    def env(self):
        return {"xparl": os.environ.get("XPARL"), "paddle": "paddle" in sys.modules}
"""


def test_embedded_cluster_without_paddle(tmp_path: Path) -> None:
    (tmp_path / "tools" / "math").mkdir(parents=True)
    (tmp_path / "tools" / "__init__.py").write_text("")
    (tmp_path / "tools" / "math" / "__init__.py").write_text("")
    (tmp_path / "tools" / "math" / "deep.py").write_text("def triple(x):\n    return 3 * x\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "table.csv").write_text("a,b\n1,2\n")
    (tmp_path / "actors.py").write_text(textwrap.dedent(ACTORS))
    (tmp_path / "main.py").write_text(textwrap.dedent(SCRIPT))
    result = subprocess.run(
        [sys.executable, "main.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["deep"] == 9
    assert report["data"] == "a,b\n1,2\n"
    assert report["env"] == {"xparl": "True", "paddle": False}
    assert report["spins"] == [sum(i % 3 for i in range(10000))] * 5
    assert report["paddle_here"] is False

    def stopped() -> bool:
        return not any(
            psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in report["pids"]
        )

    wait_for(stopped, 10, "the embedded cluster to stop with its process")
