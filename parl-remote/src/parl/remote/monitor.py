"""The xparl web monitor: a small read-only web page and JSON API beside a master.

``xparl start`` runs it as its own process (``python -m parl.remote.monitor``) with the cluster
secret and the monitor token on stdin. It is a client of the master like any other: each
request is answered from :func:`parl.remote.overview.cluster_overview` (cached for a second), so
a page left open costs the cluster one status query a second at most. It ends when its master
process ends, so no monitor outlives its cluster.

Built on the standard library's threaded ``http.server``: a handful of GET routes and three
static files need no framework, and no extra dependency lands on every cluster machine. Every
request must carry the read-only monitor token (``?token=``, ``Authorization: Bearer`` or the
cookie the page sets); the token can read the cluster's state and logs but never run code, unlike
the cluster secret. Requests are bounded: GET only, no body, short paths. A connection that has
not shown the token must send its whole request head within :data:`HEAD_TIMEOUT_S`, is closed
after its first answer, and shares :data:`STRANGER_SLOTS` with the other such connections (the
oldest one still sending its head is closed to make room for a new one; one whose head has
arrived is answered, never closed); token holders have :data:`VIEWER_SLOTS` of their own, so a
stranger holding connections open (slowloris) cannot starve the owner. Plain HTTP:
beyond loopback put it behind TLS or an SSH tunnel (docs/guide/monitor.md).
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import io
import json
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
from collections import OrderedDict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from parl.core.files import write_atomic
from parl.remote.exceptions import AuthenticationError
from parl.remote.overview import MAX_LOG_LINES, actor_log, cluster_overview
from parl.remote.processes import raise_fd_limit
from parl.remote.security import Mode, Security

import psutil

logger = logging.getLogger("parl.remote.monitor")

__all__ = ["MonitorServer", "derived_port", "monitor_url"]

# Connections that have not shown the token yet, each a thread while it sends its head. The
# owner's own connection is one of them until its request arrives (a browser opens one before
# it sends), so a stranger must open this many after it to push it out; with 16, one churning
# connections on a busy machine did so within an owner's connect-to-request gap.
STRANGER_SLOTS = 256
VIEWER_SLOTS = 16  # connections that have: the owner's, never taken by strangers
MAX_PATH = 2048
HEAD_TIMEOUT_S = 3.0  # for a stranger's whole request line and headers
REQUEST_TIMEOUT_S = 10.0  # for a viewer's next request on a kept-alive connection
CACHE_S = 1.0
_HEAD_END = b"\r\n\r\n"
_PEEK_BYTES = 16384  # a request head fits (a browser's is about 1 KiB)
_JOB_LOG = re.compile(r"^/api/actors/([0-9a-f]{8}-[0-9]{4,})/log$")
_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/monitor.css": ("monitor.css", "text/css; charset=utf-8"),
    "/monitor.js": ("monitor.js", "text/javascript; charset=utf-8"),
}
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
}


def derived_port(master_port: int) -> int:
    """The monitor's default port, as in PARL 2.x: the master's + 100 (- 100 near 65535)."""
    return master_port + 100 if master_port + 100 <= 65535 else master_port - 100


def monitor_url(host: str, port: int, token: str) -> str:
    """The URL that opens the monitor (it carries the token)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


class _Overview:
    """The cluster overview, asked of the master at most once per :data:`CACHE_S`."""

    def __init__(self, address: str, security: Security) -> None:
        self.address = address
        self.security = security
        self.lock = threading.Lock()
        self.taken = 0.0
        self.value: tuple[int, dict[str, Any]] = (503, {})

    def get(self) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if time.monotonic() - self.taken >= CACHE_S:
                self.value = self._ask()
                self.taken = time.monotonic()
            return self.value

    def _ask(self) -> tuple[int, dict[str, Any]]:
        try:
            return 200, cluster_overview(self.address, self.security)
        except (ConnectionError, AuthenticationError) as exc:
            return 503, {"error": f"the master at {self.address} did not answer: {exc}"}


class _Slots:
    """Who may hold a connection: :data:`STRANGER_SLOTS` for connections that have not shown
    the token (when they are all taken, a new one closes the oldest that is still sending its
    request head, so a stranger's idle connections cannot lock a viewer out, while a request
    that has arrived is always answered), :data:`VIEWER_SLOTS` for those that have."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.strangers: OrderedDict[socket.socket, _HeadClock | None] = OrderedDict()
        self.viewers = 0

    def admit(self, conn: socket.socket) -> None:
        with self.lock:
            if len(self.strangers) >= STRANGER_SLOTS:
                self._make_room()
            self.strangers[conn] = None

    def _make_room(self) -> None:
        """Close the oldest stranger still sending its head; if every one has sent it, close
        none (each is being answered, within :data:`REQUEST_TIMEOUT_S`, and then leaves)."""
        for conn, clock in self.strangers.items():
            if (clock is None or not clock.heard) and not _head_waiting(conn):
                del self.strangers[conn]
                # Under the lock: its thread closes it only after leave(), which waits for it.
                _hang_up(conn)
                return

    def reading(self, conn: socket.socket, clock: _HeadClock) -> None:
        """Note the clock of ``conn``'s reads, which knows when its request head has arrived."""
        with self.lock:
            if conn in self.strangers:
                self.strangers[conn] = clock

    def promote(self, conn: socket.socket) -> bool:
        """Move ``conn`` (its request showed the token) to a viewer slot, if one is free."""
        with self.lock:
            if conn not in self.strangers or self.viewers >= VIEWER_SLOTS:
                return False
            del self.strangers[conn]
            self.viewers += 1
            return True

    def leave(self, conn: socket.socket, viewer: bool) -> None:
        with self.lock:
            if viewer:
                self.viewers -= 1
            else:
                self.strangers.pop(conn, None)


def _head_waiting(conn: socket.socket) -> bool:
    """Whether a whole request head sits in ``conn``'s receive buffer, not yet read by its
    thread (which a busy machine may not have run yet)."""
    try:  # through a second object: with a timeout set, recv would wait for data first
        view = socket.socket(fileno=conn.fileno())
    except (OSError, ValueError):  # closed meanwhile (its descriptor is -1)
        return False
    try:
        waiting = view.recv(_PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:  # nothing there (EAGAIN), or gone
        return False
    finally:
        view.detach()
    return _HEAD_END in waiting


def _hang_up(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already gone
        conn.shutdown(socket.SHUT_RDWR)  # its thread's next read ends, and so does the thread


class _HeadClock(io.RawIOBase):
    """The connection's reads, each waiting at most until ``deadline``: a request head sent a
    byte at a time still ends when its time is up. ``heard`` turns true once the blank line
    that ends a request head has come in."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.deadline = time.monotonic() + HEAD_TIMEOUT_S
        self.heard = False
        self.tail = b""  # the last bytes read, for a blank line split across reads

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request head took too long")
        self.conn.settimeout(left)
        count = self.conn.recv_into(buffer)
        if not self.heard:
            seen = self.tail + bytes(memoryview(buffer)[:count])
            self.heard = _HEAD_END in seen
            self.tail = seen[-(len(_HEAD_END) - 1) :]
        return count


class MonitorServer(ThreadingHTTPServer):
    """A threaded HTTP server that answers only requests carrying ``token``, with connection
    slots reserved for those who showed it (:class:`_Slots`)."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # a burst of strangers' connects must not crowd out the owner's

    def __init__(self, host: str, port: int, address: str, security: Security, token: str):
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), _Handler)
        self.token = token
        self.master_address = address
        self.security = security
        self.overview = _Overview(address, security)
        self.slots = _Slots()
        self.cookie = f"xparl_monitor_{self.server_address[1]}"

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        self.slots.admit(request)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.leave(request, viewer=False)
            raise


class _Handler(BaseHTTPRequestHandler):
    server: MonitorServer
    timeout = HEAD_TIMEOUT_S
    server_version = "xparl-monitor"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    viewer = False  # this connection showed the token and holds a viewer slot
    raw_requestline: bytes  # read by BaseHTTPRequestHandler before parse_request

    def setup(self) -> None:
        super().setup()
        self.clock = _HeadClock(self.connection)
        self.rfile = io.BufferedReader(self.clock)
        self.server.slots.reading(self.connection, self.clock)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.slots.leave(self.connection, self.viewer)

    def handle_one_request(self) -> None:
        """Read one request head within its time (a stranger's: :data:`HEAD_TIMEOUT_S`, a
        viewer's next one: :data:`REQUEST_TIMEOUT_S`) and answer it; a connection that has
        not shown the token is closed after its answer."""
        wait = REQUEST_TIMEOUT_S if self.viewer else HEAD_TIMEOUT_S
        self.clock.deadline = time.monotonic() + wait
        try:
            super().handle_one_request()
        except OSError:  # timed out, reset, or hung up to make room
            self.close_connection = True
        if not self.viewer:
            self.close_connection = True

    def parse_request(self) -> bool:
        if self._wrong_token_in_line():  # refused before any header is waited for
            self.command, self.request_version = "GET", "HTTP/1.1"
            self.requestline = self.raw_requestline.decode("latin-1").rstrip("\r\n")[:100]
            self._json(*_WRONG_TOKEN)
            return False
        if not super().parse_request():
            return False
        self.connection.settimeout(REQUEST_TIMEOUT_S)  # for the answer
        return True

    def _wrong_token_in_line(self) -> bool:
        target = self.raw_requestline.split(b" ")[1:2]
        try:
            query = parse_qs(urlsplit(target[0].decode("latin-1")).query, max_num_fields=8)
        except (IndexError, ValueError):
            return False  # parse_request answers what is wrong with the line
        offered = query.get("token", [None])[0]
        return offered is not None and not self._is_token(offered)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.client_address[0], *args)

    def do_GET(self) -> None:
        if len(self.path) > MAX_PATH:
            self._json(HTTPStatus.REQUEST_URI_TOO_LONG, {"error": "the path is too long"})
            return
        if self.headers.get("Content-Length", "0") != "0" or self.headers.get("Transfer-Encoding"):
            self._json(HTTPStatus.BAD_REQUEST, {"error": "a GET carries no body"})
            self.close_connection = True
            return
        url = urlsplit(self.path)
        try:
            query = parse_qs(url.query, max_num_fields=8)
        except ValueError:
            self._json(HTTPStatus.BAD_REQUEST, {"error": "a query has at most 8 fields"})
            return
        refused = self._refusal(query)
        if refused is not None:
            self._json(*refused)
            return
        if not self.viewer and not self.server.slots.promote(self.connection):
            message = f"the monitor serves {VIEWER_SLOTS} viewers at once; try again shortly"
            self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": message})
            return
        self.viewer = True
        if "token" in query and url.path == "/":
            self._enter()
        elif url.path in _STATIC:
            self._static(*_STATIC[url.path])
        elif url.path.startswith("/api/"):
            self._api(url.path, query)
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {url.path[:100]!r}"})

    def _refusal(self, query: dict[str, list[str]]) -> tuple[HTTPStatus, dict[str, str]] | None:
        """401 without a token, 403 with a wrong one, None for the right one."""
        offered = query.get("token", [None])[0]
        auth = self.headers.get("Authorization", "")
        if offered is None and auth.startswith("Bearer "):
            offered = auth[len("Bearer ") :].strip()
        if offered is None:
            offered = _cookie(self.headers.get("Cookie", ""), self.server.cookie)
        if not offered:
            return HTTPStatus.UNAUTHORIZED, {
                "error": "the monitor needs its token: open the URL `xparl start` printed (it "
                "ends in ?token=...) or see `xparl status`; tools send "
                "`Authorization: Bearer TOKEN`"
            }
        if not self._is_token(offered):
            return _WRONG_TOKEN
        return None

    def _is_token(self, offered: str) -> bool:
        return hmac.compare_digest(offered.encode(), self.server.token.encode())

    def _enter(self) -> None:
        """Trade the token in the URL for a cookie, so it leaves the address bar."""
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", "/")
        self.send_header(
            "Set-Cookie",
            f"{self.server.cookie}={self.server.token}; HttpOnly; SameSite=Strict; Path=/",
        )
        self.send_header("Content-Length", "0")
        self._common_headers()
        self.end_headers()

    def _static(self, name: str, kind: str) -> None:
        body = (resources.files("parl.remote") / "monitor_page" / name).read_bytes()
        self._send(HTTPStatus.OK, body, kind)

    def _api(self, path: str, query: dict[str, list[str]]) -> None:
        if path == "/api/overview":
            code, overview = self.server.overview.get()
            self._json(code, overview)
            return
        section = path.removeprefix("/api/")
        if section in ("cluster", "workers", "clients", "actors"):
            code, overview = self.server.overview.get()
            self._json(code, overview.get(section, overview))
            return
        match = _JOB_LOG.match(path)
        if match is None:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no API {path[:100]!r}"})
            return
        try:
            lines = int(query.get("lines", ["200"])[0])
        except ValueError:
            self._json(HTTPStatus.BAD_REQUEST, {"error": "lines must be an integer"})
            return
        if not 1 <= lines <= MAX_LOG_LINES:
            message = f"lines must be between 1 and {MAX_LOG_LINES}"
            self._json(HTTPStatus.BAD_REQUEST, {"error": message})
            return
        try:
            log = actor_log(self.server.master_address, self.server.security, match[1], lines)
        except (ConnectionError, AuthenticationError) as exc:
            self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(exc)})
            return
        self._json(HTTPStatus.OK if log["found"] else HTTPStatus.NOT_FOUND, log)

    def _json(self, code: int, payload: dict[str, Any] | list[Any]) -> None:
        self._send(code, json.dumps(payload).encode(), "application/json")

    def _send(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self._common_headers()
        self.end_headers()
        self.wfile.write(body)

    def _common_headers(self) -> None:
        for key, value in _HEADERS.items():
            self.send_header(key, value)


_WRONG_TOKEN = HTTPStatus.FORBIDDEN, {"error": "wrong monitor token (see `xparl status`)"}


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";")[:32]:
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def serve_until_master_exits(server: MonitorServer, master_pid: int, stop: threading.Event) -> None:
    """Serve until ``stop`` is set or the master process ends; then close the port."""

    def watch() -> None:
        try:
            master = psutil.Process(master_pid)
        except psutil.NoSuchProcess:
            master = None
        while master is not None and not stop.wait(0.2):
            if not _alive(master):
                logger.info("the master (pid %d) exited; stopping the monitor", master_pid)
                break
        server.shutdown()

    watcher = threading.Thread(target=watch, name="xparl-monitor-watch", daemon=True)
    watcher.start()
    server.serve_forever(poll_interval=0.2)
    server.server_close()


def _alive(proc: psutil.Process) -> bool:
    """Whether ``proc`` still runs: the same process (not a reused pid), not a zombie."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def main(argv: list[str] | None = None) -> None:
    """Entry point of the monitor process; stdin carries the cluster secret, then the token."""
    parser = argparse.ArgumentParser(prog="python -m parl.remote.monitor")
    parser.add_argument("--master", required=True, help="HOST:PORT of the master")
    parser.add_argument("--master-pid", type=int, required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ready-file", default=None)
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.AUTH.value)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s monitor %(levelname)s %(message)s",
    )
    os.umask(0o077)
    raise_fd_limit()
    secret = sys.stdin.readline().strip() or None
    token = sys.stdin.readline().strip()
    try:
        if len(token) < 16:
            raise ValueError("the monitor token (second line of stdin) is missing or short")
        security = Security.for_mode(Mode(args.mode), secret)
        server = MonitorServer(args.host, args.port, args.master, security, token)
    except (ValueError, OSError) as exc:
        logger.error("%s", exc)
        if args.ready_file:
            write_atomic(args.ready_file, json.dumps({"error": str(exc)}))
        sys.exit(2)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if args.ready_file:
        write_atomic(args.ready_file, json.dumps({"pid": os.getpid(), "port": server.port}))
    logger.info("monitor serving http://%s:%d for %s", args.host, server.port, args.master)
    serve_until_master_exits(server, args.master_pid, stop)


if __name__ == "__main__":
    main()
