"""One picture of a cluster for people: the master's books joined with what each worker says
about its host and its actors. ``xparl status --json`` prints it; the web monitor serves it.

The master knows who holds what (workers, clients, actors and their CPUs); each worker knows its
machine (memory, load) and its actors' processes (class, CPU, memory, last error, the actors that
ended lately). Both are asked over the authenticated control plane, as any member would.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from parl.remote import protocol as P
from parl.remote.cluster import query
from parl.remote.security import Security

__all__ = ["MAX_LOG_LINES", "actor_log", "cluster_overview"]

MAX_LOG_LINES = 2000
_MAX_LOG_CHARS = 256 * 2**10
_ASK_WORKERS_AT_ONCE = 8


def cluster_overview(address: str, security: Security, timeout: float = 3.0) -> dict[str, Any]:
    """The cluster at ``address``: ``cluster``, ``workers``, ``clients`` and ``actors``.

    Raises:
        ConnectionError: The master did not answer within ``timeout``.
        AuthenticationError: The master refused ``security``.
    """
    status = query(address, P.STATUS, timeout=timeout, security=security)
    workers = status["workers"] + status["lost_workers"]
    answering = len(status["workers"])  # a lost worker is not asked: it would only time out
    with ThreadPoolExecutor(max_workers=_ASK_WORKERS_AT_ONCE) as pool:
        reports = list(pool.map(lambda w: _inspect(w, security, timeout), workers[:answering]))
    reports += [None] * (len(workers) - answering)
    now = time.time()
    clients = {c["client"]: c for c in status["clients"]}
    return {
        "cluster": _cluster(status, reports),
        "workers": [_worker(w, r, status) for w, r in zip(workers, reports, strict=True)],
        "clients": [
            {**c, "since": round(now - c["connected_s"], 1), "actors_alive": _count(status, c)}
            for c in status["clients"]
        ],
        "actors": _actors(status, workers, reports, clients, now),
    }


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


def _cluster(status: dict[str, Any], reports: list[dict[str, Any] | None]) -> dict[str, Any]:
    hosts = {r["hostname"]: r for r in reports if r is not None}  # one machine counts once
    keys = [
        "address", "version", "python", "security", "pid", "uptime_s", "cpus_total", "cpus_used",
        "cpus_vacant", "gpus_total", "gpus_used", "gpus_vacant", "pending_requests",
        "refused_connections", "refused_requests", "bad_messages",
    ]  # fmt: skip
    return {
        **{k: status[k] for k in keys},
        "started": round(time.time() - status["uptime_s"], 1),
        "hosts": len(hosts),
        "memory_total": sum(h["memory_total"] for h in hosts.values()),
        "memory_used": sum(h["memory_total"] - h["memory_available"] for h in hosts.values()),
        "load_1m": round(sum(h["load"][0] for h in hosts.values()), 2),
        "host_cpus": sum(h["cpu_count"] for h in hosts.values()),
        "workers": len(status["workers"]),
        "lost_workers": len(status["lost_workers"]),
        "clients": len(status["clients"]),
        "actors": len(status["actors"]),
    }


def _worker(
    entry: dict[str, Any], report: dict[str, Any] | None, status: dict[str, Any]
) -> dict[str, Any]:
    lost = entry in status["lost_workers"]
    keys = ["worker_id", "hostname", "address", "pid", "cpus_total", "cpus_used", "gpus"]
    info: dict[str, Any] = {k: entry[k] for k in keys}
    info.update(
        gpus_used=entry["gpus_used"],
        idle_jobs=entry["idle_jobs"],
        jobs=sum(1 for a in status["actors"] if a["worker_id"] == entry["worker_id"]),
        state="lost" if lost else "ok" if report is not None else "not answering",
        silent_s=entry["silent_s"],
        log_dir=entry["log_dir"],
    )
    if report is not None:
        info.update(
            cpu_count=report["cpu_count"],
            load=[round(x, 2) for x in report["load"]],
            memory_total=report["memory_total"],
            memory_used=report["memory_total"] - report["memory_available"],
        )
    return info


def _count(status: dict[str, Any], client: dict[str, Any]) -> int:
    return sum(1 for a in status["actors"] if a["client"] == client["client"])


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
        error = view.get("error")
        since = view.get("since", a["since"])
        actors.append(
            {
                "job_id": a["job_id"],
                "class_name": view.get("class_name", ""),
                "client": a["client"],
                "client_host": clients.get(a["client"], {}).get("hostname", ""),
                "worker_id": a["worker_id"],
                "worker_host": hosts.get(a["worker_id"], ""),
                "pid": a["pid"],
                "gpus": a["gpus"],
                "state": "starting" if not view else "raised" if error else "running",
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
