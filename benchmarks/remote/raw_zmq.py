"""Raw ZeroMQ baselines for the remote call path: what two processes on this machine can do.

A remote call is a DEALER/ROUTER round trip between the caller's process and a job process;
the floor it is measured against is the same round trip between two processes exchanging bytes
with nothing else to do. ``python raw_zmq.py serve PORT_FILE`` runs one echo server (a ROUTER
bound to a free loopback port, written to PORT_FILE); :func:`echo_round_trip` and
:func:`calls_per_second` drive servers started by :func:`start_servers`.

The floor of any remote call written in Python is above that echo: the least an RPC must add
is pickling the arguments and the result and looking the method up. ``python raw_zmq.py rpc
PORT_FILE`` serves exactly that (no checks, no errors, no security), and
:func:`rpc_round_trip` times a call of it, so the call path can be set against both.
"""

from __future__ import annotations

import pickle
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import zmq

START_TIMEOUT = 30.0


def serve(port_file: str) -> None:
    """Echo every message back to its sender until killed."""
    context = zmq.Context()
    server = context.socket(zmq.ROUTER)
    port = server.bind_to_random_port("tcp://127.0.0.1")
    Path(port_file).write_text(str(port))
    while True:
        server.send_multipart(server.recv_multipart(copy=False), copy=False)


class _Target:
    def noop(self) -> None:
        return None


def serve_rpc(port_file: str) -> None:
    """Answer ``[method name, pickled (args, kwargs)]`` with the pickled result, until killed."""
    context = zmq.Context()
    server = context.socket(zmq.ROUTER)
    port = server.bind_to_random_port("tcp://127.0.0.1")
    Path(port_file).write_text(str(port))
    target = _Target()
    while True:
        sender, name, body = server.recv_multipart()
        args, kwargs = pickle.loads(body)
        result = getattr(target, name.decode())(*args, **kwargs)
        server.send_multipart([sender, pickle.dumps(result, protocol=5)])


@contextmanager
def start_servers(count: int, mode: str = "serve") -> Iterator[list[int]]:
    """Start ``count`` server processes (``serve``: echo, ``rpc``: the minimal RPC); yield their
    ports; stop them by pid."""
    folder = Path(tempfile.mkdtemp(prefix="raw-zmq-"))
    procs = []
    try:
        for i in range(count):
            port_file = folder / f"port{i}"
            procs.append(
                (subprocess.Popen([sys.executable, __file__, mode, str(port_file)]), port_file)
            )
        deadline = time.monotonic() + START_TIMEOUT
        ports = []
        for proc, port_file in procs:
            while not port_file.exists() or not port_file.read_text():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"raw echo server {proc.pid} did not start")
                time.sleep(0.01)
            ports.append(int(port_file.read_text()))
        yield ports
    finally:
        for proc, _ in procs:
            proc.kill()
            proc.wait(10)


def _dealer(context: zmq.Context, port: int) -> zmq.Socket:
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(f"tcp://127.0.0.1:{port}")
    return sock


def echo_round_trip(port: int, payload: bytes, repeats: int) -> tuple[float, float]:
    """Median and p99 seconds of one round trip of ``payload`` to the server at ``port``."""
    context = zmq.Context()
    sock = _dealer(context, port)
    for _ in range(100):
        sock.send(payload, copy=False)
        sock.recv(copy=False)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        sock.send(payload, copy=False)
        sock.recv(copy=False)
        times.append(time.perf_counter() - start)
    sock.close()
    context.term()
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99)]


def rpc_round_trip(port: int, repeats: int) -> float:
    """Median seconds of one trivial call to the minimal RPC server at ``port``."""
    context = zmq.Context()
    sock = _dealer(context, port)
    times = []
    for _ in range(repeats + 100):  # the first 100 warm up
        start = time.perf_counter()
        sock.send_multipart([b"noop", pickle.dumps(((), {}), protocol=5)])
        pickle.loads(sock.recv())
        times.append(time.perf_counter() - start)
    sock.close()
    context.term()
    return statistics.median(times[100:])


def calls_per_second(ports: list[int], duration: float) -> float:
    """Round trips per second, one thread and socket per entry of ``ports`` (a port may repeat:
    several threads then share that server), each thread waiting for its reply."""
    context = zmq.Context()
    counts = [0] * len(ports)
    stop = threading.Event()

    def drive(i: int, sock: zmq.Socket) -> None:
        while not stop.is_set():
            sock.send(b"", copy=False)
            sock.recv(copy=False)
            counts[i] += 1

    socks = [_dealer(context, port) for port in ports]
    for sock in socks:  # connected and warm before the clock starts
        sock.send(b"")
        sock.recv()
    threads = [threading.Thread(target=drive, args=(i, s)) for i, s in enumerate(socks)]
    for thread in threads:
        thread.start()
    time.sleep(duration)
    stop.set()
    for thread in threads:
        thread.join()
    for sock in socks:
        sock.close()
    context.term()
    return sum(counts) / duration


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("serve", "rpc"):
        sys.exit("usage: raw_zmq.py serve|rpc PORT_FILE")
    (serve if sys.argv[1] == "serve" else serve_rpc)(sys.argv[2])
