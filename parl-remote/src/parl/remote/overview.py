"""One picture of a cluster for people: the master's books joined with what workers say about
their actors. ``xparl status --json`` prints it; the web monitor serves it.

The master keeps the overview: who holds what (workers, clients, actors and their CPUs), each
worker's host (memory, load, from its heartbeats) and the totals, so one status query answers
for a cluster of any size (at most ``limit`` entries of each list; ``counts`` has the sizes).
What only a worker knows, its actors' processes (CPU, memory, last error, the actors that
ended lately), is asked of at most :data:`MAX_INSPECTED` workers per overview, those hosting the
first actors listed, all at once and within a short timeout: never one query per worker of
the cluster.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from parl.remote import protocol as P
from parl.remote.cluster import query
from parl.remote.security import Security

__all__ = ["MAX_INSPECTED", "MAX_LOG_LINES", "actor_log", "cluster_overview"]

MAX_LOG_LINES = 2000
MAX_INSPECTED = 16  # workers asked about their actors' processes per overview
_MAX_LOG_CHARS = 256 * 2**10
_INSPECT_TIMEOUT_S = 0.5


def cluster_overview(address: str, security: Security, timeout: float = 3.0) -> dict[str, Any]:
    """The cluster at ``address``: ``cluster``, ``workers``, ``clients`` and ``actors``.

    Raises:
        ConnectionError: The master did not answer within ``timeout``.
        AuthenticationError: The master refused ``security``.
    """
    status = query(address, P.STATUS, timeout=timeout, security=security)
    workers = status["workers"] + status["lost_workers"]
    asked = _inspected(status)
    wait = min(timeout, _INSPECT_TIMEOUT_S)
    with ThreadPoolExecutor(max_workers=max(1, len(asked))) as pool:
        answers = list(pool.map(lambda w: _inspect(w, security, wait), asked))
    reports = {w["worker_id"]: r for w, r in zip(asked, answers, strict=True)}
    now = time.time()
    clients = {c["client"]: c for c in status["clients"]}
    alive = Counter(a["client"] for a in status["actors"])
    return {
        "cluster": _cluster(status),
        "workers": [_worker(w, status) for w in workers],
        "clients": [
            {**c, "since": round(now - c["connected_s"], 1), "actors_alive": alive[c["client"]]}
            for c in status["clients"]
        ],
        "actors": _actors(status, workers, list(reports.values()), clients, now),
    }


def _inspected(status: dict[str, Any]) -> list[dict[str, Any]]:
    """The answering workers to ask about their actors: those hosting the first actors listed,
    then the others in order, at most :data:`MAX_INSPECTED`."""
    answering = {w["worker_id"]: w for w in status["workers"]}
    chosen: dict[str, dict[str, Any]] = {}
    hosts = (a["worker_id"] for a in status["actors"])
    for worker_id in [*hosts, *answering]:
        if len(chosen) >= MAX_INSPECTED:
            break
        if worker_id in answering:
            chosen.setdefault(worker_id, answering[worker_id])
    return list(chosen.values())


def actor_log(
    address: str, security: Security, job_id: str, lines: int, timeout: float = 3.0
) -> dict[str, Any]:
    """The last ``lines`` lines (at most :data:`MAX_LOG_LINES`, 256 KiB) of an actor's log,
    asked of the cluster's workers; ``{"found": False}`` when none has it."""
    lines = max(1, min(lines, MAX_LOG_LINES))
    status = query(address, P.STATUS, timeout=timeout, security=security)
    for worker in status["workers"] + status["lost_workers"]:
        if not job_id.startswith(worker["worker_id"]):
            continue
        try:
            answer = query(
                worker["address"],
                P.READ_LOG,
                {"job_id": job_id, "lines": lines},
                timeout=timeout,
                security=security,
            )
        except ConnectionError:
            return {"found": False, "job_id": job_id, "error": "its worker did not answer"}
        if answer.get("found"):
            text = str(answer.get("log", ""))
            cut = bool(answer.get("truncated")) or len(text) > _MAX_LOG_CHARS
            return {"found": True, "job_id": job_id, "log": text[-_MAX_LOG_CHARS:], "cut": cut}
    return {"found": False, "job_id": job_id}


def _inspect(worker: dict[str, Any], security: Security, timeout: float) -> dict[str, Any] | None:
    try:
        return query(worker["address"], P.INSPECT, timeout=timeout, security=security)
    except ConnectionError:
        return None


def _cluster(status: dict[str, Any]) -> dict[str, Any]:
    keys = [
        "address", "version", "python", "security", "pid", "uptime_s", "cpus_total", "cpus_used",
        "cpus_vacant", "gpus_total", "gpus_used", "gpus_vacant", "pending_requests",
        "refused_connections", "handshakes_hung_up", "refused_requests", "bad_messages",
        "lag_s", "behind", "beat_every_s",
    ]  # fmt: skip
    counts = status["counts"]
    return {
        **{k: status[k] for k in keys},
        **status["machines"],
        "started": round(time.time() - status["uptime_s"], 1),
        "workers": counts["workers"],
        "lost_workers": counts["lost_workers"],
        "clients": counts["clients"],
        "actors": counts["actors"],
        "listed": status["limit"],
    }


def _worker(entry: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    lost = entry in status["lost_workers"]
    keys = ["worker_id", "hostname", "address", "pid", "cpus_total", "cpus_used", "gpus"]
    info: dict[str, Any] = {k: entry[k] for k in keys}
    info.update(
        gpus_used=entry["gpus_used"],
        idle_jobs=entry["idle_jobs"],
        jobs=entry["jobs"],
        state="lost" if lost else "ok",
        silent_s=entry["silent_s"],
        log_dir=entry["log_dir"],
    )
    machine = entry.get("machine")
    if machine is not None:
        info.update(
            cpu_count=machine["cpu_count"],
            load=machine["load"],
            memory_total=machine["memory_total"],
            memory_used=machine["memory_total"] - machine["memory_available"],
        )
    return info


def _actors(
    status: dict[str, Any],
    workers: list[dict[str, Any]],
    reports: list[dict[str, Any] | None],
    clients: dict[str, dict[str, Any]],
    now: float,
) -> list[dict[str, Any]]:
    """Live actors (the master's books, with their worker's view) then ended ones, newest
    first. States: starting, running, raised (alive; its last call raised), died, released."""
    hosts = {w["worker_id"]: w["hostname"] for w in workers}
    seen: dict[str, dict[str, Any]] = {}
    ended: list[dict[str, Any]] = []
    for report in reports:
        if report is None:
            continue
        seen.update({a["job_id"]: a for a in report["actors"]})
        ended += report["ended"]
    actors = []
    for a in status["actors"]:
        view = seen.get(a["job_id"], {})
        class_name = a.get("class_name") or view.get("class_name", "")
        error = view.get("error")
        since = view.get("since", a["since"])
        actors.append(
            {
                "job_id": a["job_id"],
                "class_name": class_name,
                "client": a["client"],
                "client_host": clients.get(a["client"], {}).get("hostname", ""),
                "worker_id": a["worker_id"],
                "worker_host": hosts.get(a["worker_id"], ""),
                "pid": a["pid"],
                "gpus": a["gpus"],
                "state": "starting" if not a["claimed"] else "raised" if error else "running",
                "cpu_percent": view.get("cpu_percent"),
                "rss": view.get("rss"),
                "since": since,
                "uptime_s": round(now - since, 1),
                "error": error,
                "reason": "",
                "message": "",
            }
        )
    live = {a["job_id"] for a in actors}
    for e in sorted(ended, key=lambda e: -e["ended"]):
        if e["job_id"] in live:
            continue
        worker_id = e["job_id"].split("-")[0]
        actors.append(
            {
                "job_id": e["job_id"],
                "class_name": e["class_name"],
                "client": e["client_id"][:8],
                "client_host": clients.get(e["client_id"][:8], {}).get("hostname", ""),
                "worker_id": worker_id,
                "worker_host": hosts.get(worker_id, ""),
                "pid": e["pid"],
                "gpus": [],
                "state": "released" if e["reason"] == "released" else "died",
                "cpu_percent": None,
                "rss": None,
                "since": e["since"],
                "uptime_s": round(e["ended"] - e["since"], 1),
                "ended": e["ended"],
                "error": e["error"],
                "reason": e["reason"],
                "message": e["message"],
            }
        )
    return actors
