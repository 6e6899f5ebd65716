"""The web monitor's JSON API on a real cluster (no browser), its token, its bounds, its end
with the master, and ``xparl status`` on a cluster reached by two names."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any

import parl.remote
from parl.remote.cluster import LocalCluster, recorded_clusters
from parl.remote.monitor import HEAD_TIMEOUT_S, STRANGER_SLOTS, VIEWER_SLOTS, derived_port

import psutil
import pytest

from .conftest import free_port, gone, stop_and_check, wait_for
from .monitor_actors import Unborn, three_states
from .test_cli import xparl


def get(
    cluster: LocalCluster, path: str, token: str | None = "", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], Any]:
    """GET ``path`` from the cluster's monitor with its token (``""``), another one, or none."""
    assert cluster.monitor is not None
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token or cluster.monitor['token']}"
    conn = http.client.HTTPConnection("127.0.0.1", cluster.monitor["port"], timeout=10)
    try:
        conn.request("GET", path, headers=sent)
        answer = conn.getresponse()
        body = answer.read()
        kind = answer.getheader("Content-Type", "")
        value = json.loads(body) if kind.startswith("application/json") else body.decode()
        return answer.status, dict(answer.getheaders()), value
    finally:
        conn.close()


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def actors_by_class(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    status, _, overview = get(cluster, "/api/overview")
    assert status == 200, overview
    return {a["class_name"]: a for a in overview["actors"]}


def settled(cluster: LocalCluster) -> dict[str, dict[str, Any]] | None:
    actors = actors_by_class(cluster)
    states = {name: a["state"] for name, a in actors.items()}
    wanted = {"Greeter": "running", "Faulty": "raised", "Doomed": "died"}
    return actors if states == wanted else None


@pytest.fixture(scope="module")
def monitored() -> Iterator[LocalCluster]:
    """One monitored 3-CPU cluster for the API tests of this module."""
    cluster = LocalCluster.start(3, monitor_port=0)
    assert cluster.monitor is not None
    yield cluster
    parl.remote.disconnect()
    stop_and_check(cluster)


def test_the_api_shows_each_actor_its_error_and_its_log(monitored: LocalCluster) -> None:
    parl.remote.connect(monitored.address)
    greeter, faulty, doomed_id = three_states()
    actors = wait_for(lambda: settled(monitored), 15, "the three actor states")
    assert isinstance(actors, dict)
    raised = actors["Faulty"]["error"]
    assert raised["type"] == "builtins.ValueError"
    assert "boom: the monitor shows this traceback" in raised["message"]
    assert "Traceback (most recent call last)" in raised["traceback"]
    assert 'raise ValueError("boom' in raised["traceback"]
    died = actors["Doomed"]
    assert died["job_id"] == doomed_id and "SIGKILL" in died["message"]
    running = actors["Greeter"]
    assert running["error"] is None and running["rss"] > 1 << 20 and running["uptime_s"] >= 0
    assert running["pid"] != os.getpid() and running["client_host"] == socket.gethostname()

    text = xparl("status", "--address", monitored.address).stdout
    assert "(Faulty): raised" in text and "ValueError: boom: the monitor shows" in text, text
    assert "(Greeter): running" in text and f"{doomed_id} (Doomed): died" in text

    _, _, cluster = get(monitored, "/api/cluster")
    assert cluster["address"] == monitored.address
    assert (cluster["cpus_total"], cluster["cpus_used"], cluster["cpus_vacant"]) == (3, 2, 1)
    assert cluster["memory_total"] > cluster["memory_used"] > 0 and cluster["uptime_s"] > 0
    _, _, workers = get(monitored, "/api/workers")
    (worker,) = workers
    assert worker["jobs"] == 2 and worker["state"] == "ok" and len(worker["load"]) == 3
    _, _, clients = get(monitored, "/api/clients")
    (client,) = clients
    assert client["pid"] == os.getpid() and client["actors_alive"] == 2

    with pytest.raises(RuntimeError, match="fails on purpose"):
        Unborn()

    def unborn() -> dict[str, Any] | None:
        actor = actors_by_class(monitored).get("Unborn")
        return actor if actor and actor["state"] == "died" and actor["error"] else None

    failed = wait_for(unborn, 15, "the actor whose constructor raised to show as died")
    # Its job exits on its own or is ended by the worker once the client gives it up.
    assert isinstance(failed, dict) and "died" in failed["message"]
    assert "this constructor fails on purpose" in failed["error"]["traceback"]

    status, _, log = get(monitored, f"/api/actors/{running['job_id']}/log?lines=50")
    assert status == 200 and "hello monitor from the greeter's log" in log["log"]
    status, _, log = get(monitored, f"/api/actors/{actors['Faulty']['job_id']}/log")
    assert status == 200 and "boom: the monitor shows this traceback" in log["log"]
    status, _, log = get(monitored, f"/api/actors/{doomed_id}/log")
    assert status == 200 and "hosts an actor of class Doomed" in log["log"]
    del greeter, faulty
    parl.remote.disconnect()


def test_the_monitor_needs_its_token_and_bounds_requests(monitored: LocalCluster) -> None:
    assert monitored.monitor is not None
    token = monitored.monitor["token"]
    status, _, answer = get(monitored, "/api/overview", token=None)
    assert status == 401 and "token" in answer["error"]
    assert get(monitored, "/api/overview", token="x" * 32)[0] == 403
    assert get(monitored, "/", token=None)[0] == 401
    assert get(monitored, "/monitor.js", token=None)[0] == 401
    assert get(monitored, f"/api/overview?token={token}x", token=None)[0] == 403
    # The cluster secret is not the monitor token.
    assert monitored.security.secret is not None
    assert get(monitored, "/api/overview", token=monitored.security.secret)[0] == 403

    # The printed URL trades its token for a cookie and sends the browser to a clean URL.
    status, headers, _ = get(monitored, f"/?token={token}", token=None)
    assert status == 303 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"].split(";")[0]
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    status, headers, page = get(monitored, "/", token=None, headers={"Cookie": cookie})
    assert status == 200 and "<title>xparl monitor</title>" in page
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "http://" not in page and "https://" not in page  # nothing fetched from elsewhere

    assert get(monitored, "/api/" + "a" * 5000)[0] == 414
    assert get(monitored, "/api/actors/00000000-0001/log?lines=0")[0] == 400
    assert get(monitored, "/api/actors/00000000-0001/log?lines=many")[0] == 400
    assert get(monitored, "/api/actors/00000000-0001/log")[0] == 404
    assert get(monitored, "/api/actors/..%2F..%2Fsecret/log")[0] == 404
    assert get(monitored, "/api/nothing")[0] == 404
    with socket.create_connection(("127.0.0.1", monitored.monitor["port"]), timeout=10) as raw:
        raw.sendall(b"POST /api/overview HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
        assert raw.recv(100).startswith(b"HTTP/1.1 501")


class Slowloris:
    """A stranger that keeps ``count`` connections to the monitor open, each sending one more
    header byte every ``every`` seconds and replaced as soon as the monitor closes it."""

    def __init__(self, address: tuple[str, int], count: int, every: float) -> None:
        self.address, self.count, self.every = address, count, every
        self.socks: list[socket.socket] = []
        self.closed_by_monitor = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Slowloris:
        self.thread.start()
        wait_for(lambda: len(self.socks) >= self.count, 10, "the slow connections")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        for sock in self.socks:
            sock.close()

    def _open(self) -> socket.socket:
        sock = socket.create_connection(self.address, timeout=5)
        sock.sendall(b"GET /api/cluster HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        sock.setblocking(False)
        return sock

    def _run(self) -> None:
        while not self.stop.is_set():
            for i, sock in enumerate(list(self.socks)):
                try:
                    if sock.recv(4096) == b"":
                        raise ConnectionResetError
                except BlockingIOError:  # nothing from the monitor: still held open
                    with contextlib.suppress(BlockingIOError):
                        sock.send(b"a")
                    continue
                except OSError:
                    pass
                self.closed_by_monitor += 1
                sock.close()
                self.socks[i] = self._open()
            while len(self.socks) < self.count:
                self.socks.append(self._open())
            self.stop.wait(self.every)


def test_a_slowloris_cannot_starve_the_owner(monitored: LocalCluster) -> None:
    """More slow connections than the strangers' slots, each sending a header byte at a time
    and reopened when closed: every request of the token holder is still answered, and the
    monitor closes the slow connections (head deadline, or making room)."""
    assert monitored.monitor is not None
    address = ("127.0.0.1", monitored.monitor["port"])
    with Slowloris(address, STRANGER_SLOTS + 64, every=0.2) as attack:
        answers = [get(monitored, "/api/cluster")[0] for _ in range(12)]
        wait_for(
            lambda: attack.closed_by_monitor >= 64,
            10 * HEAD_TIMEOUT_S,
            "the monitor to close the slow connections",
        )
    assert answers == [200] * 12


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the other end closed ``sock``, asked without waiting."""
    view = socket.socket(fileno=sock.fileno())  # no timeout: recv must not wait for data
    try:
        return view.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        view.detach()


def _held_by_monitor(cluster: LocalCluster) -> int:
    """The monitor's open connections on its port (accepted, not yet closed)."""
    assert cluster.monitor is not None
    port = cluster.monitor["port"]
    connections = psutil.Process(cluster.monitor["pid"]).net_connections("tcp")
    return sum(c.laddr.port == port and c.status == psutil.CONN_ESTABLISHED for c in connections)


def test_an_owner_connection_opened_before_a_slowloris_is_answered(
    monitored: LocalCluster,
) -> None:
    """A browser opens its connection before it sends the request: the owner's connection,
    opened before 64 slow ones of a stranger, is still open once the monitor has accepted them
    all, and its request is answered; so are 28 more owner requests during the attack, each
    within the monitor's own deadlines. (With 16 strangers' slots the 17th slow connection
    closed the owner's: 1 of 28 owner requests was lost under a churning slowloris.)"""
    assert monitored.monitor is not None
    address = ("127.0.0.1", monitored.monitor["port"])
    owner = http.client.HTTPConnection(*address, timeout=HEAD_TIMEOUT_S + 10)
    owner.connect()
    assert owner.sock is not None
    already = _held_by_monitor(monitored)
    try:
        with Slowloris(address, 64, every=0.2):
            wait_for(
                lambda: _closed_by_peer(owner.sock) or _held_by_monitor(monitored) >= already + 64,
                20,
                "the monitor to accept the slow connections",
            )
            assert not _closed_by_peer(owner.sock), "the monitor closed the owner's connection"
            owner.request("GET", "/api/cluster", headers=_bearer(monitored))
            first = owner.getresponse()
            first.read()
            answers = [get(monitored, "/api/cluster")[0] for _ in range(28)]
    finally:
        owner.close()
    assert (first.status, answers) == (200, [200] * 28)


def _bearer(cluster: LocalCluster) -> dict[str, str]:
    assert cluster.monitor is not None
    return {"Authorization": f"Bearer {cluster.monitor['token']}"}


def test_strangers_are_answered_once_and_viewers_have_slots_of_their_own(
    monitored: LocalCluster,
) -> None:
    """A stranger's connection closes after its 401; token holders keep theirs alive, up to
    VIEWER_SLOTS of them, and get 503 beyond (the strangers' slots are not theirs to take)."""
    assert monitored.monitor is not None
    address = ("127.0.0.1", monitored.monitor["port"])
    with socket.create_connection(address, timeout=10) as stranger:
        stranger.sendall(b"GET /api/cluster HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := stranger.recv(4096):
            answer += chunk  # ends when the monitor closes the connection
        assert answer.startswith(b"HTTP/1.1 401")
    viewers = [http.client.HTTPConnection(*address, timeout=10) for _ in range(VIEWER_SLOTS + 1)]
    bearer = {"Authorization": f"Bearer {monitored.monitor['token']}"}
    try:
        codes = []
        for conn in viewers:
            conn.request("GET", "/api/cluster", headers=bearer)
            response = conn.getresponse()
            response.read()
            codes.append(response.status)
        assert codes == [200] * VIEWER_SLOTS + [503]
        viewers[0].request("GET", "/api/cluster", headers=bearer)  # kept alive: served again
        assert viewers[0].getresponse().status == 200
    finally:
        for conn in viewers:
            conn.close()
    wait_for(lambda: get(monitored, "/api/cluster")[0] == 200, 10, "a viewer slot free again")


def test_the_monitor_ends_with_its_master(start_cluster: Any) -> None:
    cluster = start_cluster(0, monitor_port=0)
    assert cluster.monitor is not None
    port, pid = cluster.monitor["port"], cluster.monitor["pid"]
    assert get(cluster, "/api/cluster")[0] == 200
    os.kill(cluster.master["pid"], signal.SIGKILL)
    wait_for(lambda: gone([pid]), 10, "the monitor to exit after its master")
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))  # nothing holds the monitor's port any more


def test_xparl_start_prints_the_monitor_and_status_lists_a_cluster_once() -> None:
    port = free_port()
    assert (
        "exclude each other"
        in xparl(
            "start", "--port", str(port), "--no-monitor", "--monitor_port", "1", check=False
        ).stderr
    )
    assert (
        "the master's --port"
        in xparl("start", "--port", str(port), "--monitor_port", str(port), check=False).stderr
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = str(taken.getsockname()[1])
        refused = xparl("start", "--port", str(port), "--monitor_port", busy, check=False)
        assert refused.returncode != 0 and f"port {busy} on 127.0.0.1 is in use" in refused.stderr
    out = xparl("start", "--port", str(port), "--cpu_num", "1").stdout
    (cluster,) = [c for c in recorded_clusters() if c.port == port]
    assert cluster.monitor is not None and cluster.monitor_url in out
    # PARL's default port, unless something else holds it.
    default = derived_port(port)
    assert default in (port + 100, port - 100)
    assert cluster.monitor["port"] == default or not port_is_free(default)
    monitor_pid = cluster.monitor["pid"]
    try:
        xparl("connect", "--address", f"localhost:{port}", "--cpu_num", "1")
        text = xparl("status").stdout
        assert text.count(f"Cluster 127.0.0.1:{port}") == 1, text
        assert cluster.monitor_url in text
        overviews = json.loads(xparl("status", "--json").stdout)
        (overview,) = [o for o in overviews if o["cluster"]["address"] == f"127.0.0.1:{port}"]
        assert overview["cluster"]["cpus_total"] == 2 and len(overview["workers"]) == 2
        assert overview["cluster"]["monitor_url"] == cluster.monitor_url
        assert get(cluster, "/api/cluster")[2]["cpus_total"] == 2
    finally:
        xparl("stop", "--port", str(port))
    wait_for(lambda: gone([monitor_pid]), 10, "the monitor to stop with the cluster")
