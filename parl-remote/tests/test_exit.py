"""A program that exits (or disconnects) while its other threads are inside remote calls.

The client's sockets belong to the threads that use them: closing one from another thread
aborts libzmq (``Assertion failed ... signaler.cpp``), and terminating the context under a
socket still in use hangs the exit or hands that thread zmq's raw ``ContextTerminated``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from parl.remote.cluster import query

import pytest

from .conftest import wait_for

RUNS = 3
EXIT_WITHIN = 10.0  # seconds from the main thread's return to the process's exit (loaded CI)
FORBIDDEN = ("Traceback", "ContextTerminated", "Assertion failed", "ZMQError")

# The reproduction: a daemon thread calls a slow actor in a loop; the main thread returns
# while a call is in flight. MODE picks how the thread calls (wait=True, or wait=False and
# waiting on each call's future).
# The actor's call marks a file when it starts (the actor runs on this machine), so the script
# waits, bounded, until a call is really in flight instead of sleeping and hoping.
IN_FLIGHT = """
import os, sys, threading, time

def in_flight(marker):
    deadline = time.monotonic() + 30
    while not os.path.exists(marker):
        if time.monotonic() > deadline:
            sys.exit("the remote call never started")
        time.sleep(0.02)
"""

EXIT_SCRIPT = (
    IN_FLIGHT
    + """
import parl

@parl.remote_class(wait=sys.argv[2] == "wait")
class Slow:
    def work(self, marker):
        open(marker, "w").close()
        threading.Event().wait(30)  # a call still running when the program ends
        return 1

def loop(actor, marker):
    while True:
        result = actor.work(marker)
        if sys.argv[2] == "future":
            result.get()

if __name__ == "__main__":
    parl.connect(sys.argv[1])
    a = Slow()
    threading.Thread(target=loop, args=(a, sys.argv[3]), daemon=True).start()
    in_flight(sys.argv[3])
    print("main thread returns", flush=True)
"""
)

# parl.remote.disconnect() while another thread is inside a call: that thread gets a
# parl-remote error at once, and connecting again works.
DISCONNECT_SCRIPT = (
    IN_FLIGHT
    + """
import parl, parl.remote

@parl.remote_class
class Slow:
    def work(self, marker):
        open(marker, "w").close()
        threading.Event().wait(30)  # a call still running at the disconnect
        return 1

    def ping(self):
        return "pong"

caught = []

def call(actor, marker):
    try:
        actor.work(marker)
    except BaseException as exc:
        caught.append(exc)

if __name__ == "__main__":
    parl.connect(sys.argv[1])
    a = Slow()
    thread = threading.Thread(target=call, args=(a, sys.argv[2]), daemon=True)
    thread.start()
    in_flight(sys.argv[2])
    started = time.monotonic()
    parl.remote.disconnect()
    thread.join(10)
    print("disconnected in", round(time.monotonic() - started, 1), flush=True)
    exc = caught[0] if caught else None
    print("caught", type(exc).__name__, isinstance(exc, parl.remote.RemoteError), flush=True)
    print("message", exc, flush=True)
    parl.connect(sys.argv[1])
    print("again", Slow().ping(), flush=True)
"""
)


def _run(script: Path, *args: str, timeout: float = 60) -> tuple[int, str, float]:
    """Run ``script``; its exit code, its output and the seconds from its line "main thread
    returns" (or its start) to its exit. Killed (by pid) if it outlives ``timeout``."""
    proc = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        output: list[str] = []
        returned = time.monotonic()
        deadline = returned + timeout
        for line in proc.stdout:  # ends when the process (and anything it started) exits
            output.append(line)
            if line.startswith("main thread returns"):
                returned = time.monotonic()
                deadline = returned + EXIT_WITHIN
                break
        proc.wait(max(0.1, deadline - time.monotonic()))
        output.append(proc.stdout.read())
        return proc.returncode, "".join(output), time.monotonic() - returned
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{script.name} {args} hung at exit (killed)") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.parametrize("mode", ["wait", "future"])
def test_exit_while_daemon_thread_is_in_a_call(start_cluster, tmp_path: Path, mode: str) -> None:
    cluster = start_cluster(cpu_num=1)
    script = tmp_path / "exit_mid_call.py"
    script.write_text(textwrap.dedent(EXIT_SCRIPT))
    for run in range(RUNS):
        marker = tmp_path / f"in-flight-{run}"
        code, output, took = _run(script, cluster.address, mode, str(marker))
        assert code == 0, f"run {run}: exit code {code}:\n{output}"
        assert took < EXIT_WITHIN, f"run {run}: exit took {took:.1f} s:\n{output}"
        for word in FORBIDDEN:
            assert word not in output, f"run {run}: {word!r} in the output:\n{output}"
        # The actor was released: its CPU is free for the next run.
        wait_for(lambda: query(cluster.address, b"status")["cpus_used"] == 0, 10, "the actor's CPU")


def test_disconnect_while_another_thread_is_in_a_call(start_cluster, tmp_path: Path) -> None:
    cluster = start_cluster(cpu_num=2)
    script = tmp_path / "disconnect_mid_call.py"
    script.write_text(textwrap.dedent(DISCONNECT_SCRIPT))
    code, output, _ = _run(script, cluster.address, str(tmp_path / "in-flight"))
    assert code == 0, f"exit code {code}:\n{output}"
    for word in FORBIDDEN:
        assert word not in output, f"{word!r} in the output:\n{output}"
    lines = output.splitlines()
    seconds = [float(line.split()[-1]) for line in lines if line.startswith("disconnected in")]
    assert seconds and seconds[0] < 5, output
    assert "caught ActorDiedError True" in lines, output
    assert "again pong" in lines, output
