"""What clusters leave in ``$XPARL_HOME``: an embedded cluster removes its folder (secret
included) when its program ends, a killed program's folder is swept by the next ``xparl``
command (which says so), and ``xparl logs`` lists the logs of running clusters unless asked for
all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import parl
import parl.remote

import pytest

from .conftest import Script, gone, wait_for
from .test_cli import xparl


@parl.remote_class
class Talker:
    def say(self, text: str) -> str:
        print(text, flush=True)
        return text


# Connects an embedded cluster, starts an actor that prints, then reports the cluster's folder,
# its pids and the actor's id, and ends as argv[1] says once stdin has a line (or closes).
PROGRAM = """
import json, os, signal, sys
import parl, parl.remote

@parl.remote_class
class Talker:
    def say(self, text):
        print(text, flush=True)
        return text

client = parl.connect(cpu_num=1)
talker = Talker()
talker.say("a line of the embedded actor")
pids = [r["pid"] for r in client.cluster.processes()]
report = {"folder": str(client.cluster.data_dir), "pids": pids, "job": parl.remote.actor_id(talker)}
print(json.dumps(report), flush=True)
sys.stdin.readline()
if sys.argv[1] == "raise":
    raise RuntimeError("the program failed")
if sys.argv[1] == "ctrl-c":
    os.kill(os.getpid(), signal.SIGINT)
    signal.pause()
"""


def _started(scripts, tmp_path: Path, how: str) -> tuple[Script, dict]:
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(PROGRAM))
    script = scripts(program, how)
    line = wait_for(lambda: script.saw('{"folder"'), 60, "the program's report")
    report = json.loads(line[0])  # type: ignore[index]
    folder = Path(report["folder"])
    assert (folder / "secret").is_file() and (folder / "cluster.json").is_file()
    return script, report


@pytest.mark.parametrize("how", ["return", "raise", "ctrl-c"])
def test_an_embedded_cluster_removes_its_folder_when_its_program_ends(
    scripts, tmp_path: Path, how: str
) -> None:
    script, report = _started(scripts, tmp_path, how)
    script.finish(timeout=30)
    assert script.proc.returncode == {"return": 0, "raise": 1, "ctrl-c": -signal.SIGINT}[how]
    assert not Path(report["folder"]).exists(), script.lines
    assert gone(report["pids"])


def test_a_killed_programs_folder_is_swept_by_the_next_xparl_command(scripts, tmp_path) -> None:
    script, report = _started(scripts, tmp_path, "return")
    folder = Path(report["folder"])
    listed = xparl("logs")
    assert f"{report['job']}\t" in listed.stdout  # a running program's cluster: listed, kept
    assert folder.exists() and "removed" not in listed.stderr
    script.proc.send_signal(signal.SIGKILL)
    script.proc.wait(10)
    assert folder.exists()  # nothing of the program could run
    wait_for(lambda: gone(report["pids"]), 30, "the cluster to notice its program is gone")
    status = xparl("status")
    assert not folder.exists()
    said = f"xparl: removed {folder}: the embedded cluster of the program with pid "
    assert f"{said}{script.proc.pid}, which ended without stopping it" in status.stderr
    assert "removed" not in xparl("status").stderr  # said once


def test_a_folder_of_a_program_killed_while_starting_a_cluster_is_swept() -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                           capture_output=True, check=True)  # fmt: skip
    clusters = Path(os.environ["XPARL_HOME"], "clusters")
    staging = clusters / f".starting-{ended.stdout.strip()}-abcdef"
    staging.mkdir(parents=True)
    (staging / "master.log").write_text("")
    ours = clusters / f".starting-{os.getpid()}-abcdef"  # a start still under way: kept
    ours.mkdir()
    try:
        result = xparl("stop")
        assert not staging.exists() and ours.exists()
        assert "while it was starting a cluster" in result.stderr
    finally:
        ours.rmdir()


def test_xparl_logs_lists_running_clusters_unless_asked_for_all(
    start_cluster, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("XPARL_HOME", str(tmp_path / "home"))  # no other test's clusters
    stopped, running = start_cluster(cpu_num=1), start_cluster(cpu_num=1)
    jobs = {}
    for name, cluster in (("stopped", stopped), ("running", running)):
        parl.remote.connect(cluster.address)
        talker = Talker()
        talker.say(f"a line of the {name} cluster")
        jobs[name] = parl.remote.actor_id(talker)
        del talker
        parl.remote.disconnect()
    stopped.stop()
    listed = xparl("logs").stdout
    assert f"{jobs['running']}\t" in listed and jobs["stopped"] not in listed
    every = xparl("logs", "--all").stdout
    assert f"{jobs['running']}\t" in every and f"{jobs['stopped']}\t" in every
    assert "a line of the stopped cluster" in xparl("logs", jobs["stopped"]).stdout
    running.stop()
    nothing = xparl("logs").stdout
    assert "no actor logs of running clusters" in nothing and "xparl logs --all" in nothing
