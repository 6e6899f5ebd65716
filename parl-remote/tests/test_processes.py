"""What an actor leaves behind: its processes (gone with it), its logs (rotated, pruned, read
through a bounded tail), and `xparl stop` leaving other programs' embedded clusters alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tracemalloc

import parl
import parl.remote
from parl.remote.cluster import recorded_clusters
from parl.remote.logs import tail

import pytest

from .conftest import gone, wait_for


@parl.remote_class
class Spawner:
    """An actor that starts a child and a grandchild whose parent exits at once."""

    def spawn(self) -> list[int]:
        child = subprocess.Popen(["sleep", "600"])
        script = (
            "import subprocess; print(subprocess.Popen(['sleep', '600'], stdout=-3, stderr=-3).pid)"
        )
        orphan = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        return [child.pid, int(orphan.stdout)]


def test_an_actors_processes_go_with_it(start_cluster) -> None:
    cluster = start_cluster(2)
    parl.remote.connect(cluster.address)
    released = Spawner()
    pids = released.spawn()
    assert not gone(pids)
    del released  # release: the job exits and the worker ends its process group
    wait_for(lambda: gone(pids), 10, "the released actor's child and grandchild to end")

    victim = cluster.add_worker(1)
    cluster.wait_for_jobs(3, 20)
    actors = [Spawner() for _ in range(3)]  # one of them lands on the victim
    (doomed,) = [a for a in actors if a._xparl_channel.job_id.startswith(victim["worker_id"])]
    pids = doomed.spawn()
    os.kill(victim["pid"], signal.SIGKILL)  # its jobs notice and end their groups themselves
    wait_for(lambda: gone(pids), 10, "a dead worker's actors' processes to end")


def test_xparl_stop_ends_actor_processes(start_cluster) -> None:
    cluster = start_cluster(1)
    parl.remote.connect(cluster.address)
    actor = Spawner()
    pids = actor.spawn()
    cluster.stop()
    wait_for(lambda: gone(pids), 10, "the actor's processes to end with the cluster")


@parl.remote_class
class Chatty:
    def talk(self, lines: int, tag: str) -> int:
        for i in range(lines):
            print(f"{tag} line {i} " + "x" * 100)
        sys.stdout.flush()
        return lines


def test_logs_rotate_are_pruned_and_read_through_a_bounded_tail(
    start_cluster, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("XPARL_LOG_MAX_MB", "0.25")
    monkeypatch.setenv("XPARL_KEEP_LOGS", "2")
    cluster = start_cluster(1)
    parl.remote.connect(cluster.address)
    actor = Chatty()
    job_id = parl.remote.actor_id(actor)
    log = next(cluster.data_dir.glob(f"workers/*/logs/{job_id}.log"))
    actor.talk(10_000, "first")  # about 1.1 MB: four times the limit
    older = log.with_name(log.name + ".1")
    wait_for(older.exists, 10, "the log to rotate")
    wait_for(lambda: log.stat().st_size < 2**18, 10, "the log back under its limit")
    assert older.stat().st_size <= 2**17
    actor.talk(3, "second")
    cli = [sys.executable, "-m", "parl.remote.cli", "logs", job_id, "--tail", "4"]
    shown = subprocess.run(cli, capture_output=True, text=True, timeout=60, check=True).stdout
    assert shown.splitlines()[0].startswith("first line 9999")  # read on into the rotated part
    assert [line.split()[:3] for line in shown.splitlines()[1:]] == [
        ["second", "line", str(i)] for i in range(3)
    ]
    del actor
    for i in range(3):
        Chatty().talk(1, f"actor{i}")
    wait_for(
        lambda: len(list(log.parent.glob("*.log"))) <= 2 + 1,  # two finished + the warm job
        10,
        "old logs to be pruned",
    )


def test_a_tail_reads_only_the_end_of_a_huge_log(tmp_path) -> None:
    huge = tmp_path / "huge.log"
    with open(huge, "wb") as handle:
        handle.truncate(2**30)  # 1 GiB, sparse
        handle.seek(2**30)
        handle.write(b"\nthe last line\n")
    tracemalloc.start()
    text, cut = tail(huge, 1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert text == "the last line\n" and not cut
    assert peak < 4 * 2**20
    text, cut = tail(huge)
    assert cut and text.endswith("the last line\n") and len(text) <= 2**20


EMBEDDED = """
import sys, parl
parl.connect(cpu_num=1)
print("ready", flush=True)
sys.stdin.readline()
"""


def test_xparl_stop_leaves_another_programs_embedded_cluster(
    scripts, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("XPARL_HOME", str(tmp_path / "home"))
    env = dict(os.environ)
    program = scripts(EMBEDDED, env=env)
    wait_for(lambda: program.saw("ready"), 60, "the program's embedded cluster")
    result = subprocess.run(
        [sys.executable, "-m", "parl.remote.cli", "stop"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert f"belongs to the program with pid {program.proc.pid}" in result.stdout, result.stdout
    (cluster,) = list(recorded_clusters())
    pids = [r["pid"] for r in cluster.processes()]
    assert cluster.is_running() and not gone(pids)
    program.finish()
    wait_for(lambda: gone(pids), 15, "the embedded cluster to stop with its program")


def test_exit_and_interrupt_inside_an_actor_are_remote_errors(connected) -> None:
    @parl.remote_class
    class Quitter:
        def quit(self, code: int) -> None:
            sys.exit(code)

        def interrupt(self) -> None:
            raise KeyboardInterrupt

        def ping(self) -> str:
            return "pong"

    actor = Quitter()
    with pytest.raises(parl.remote.RemoteError, match="SystemExit: 3"):
        actor.quit(3)
    with pytest.raises(parl.remote.RemoteError, match="KeyboardInterrupt"):
        actor.interrupt()
    assert actor.ping() == "pong"  # and this process is still here to say so
