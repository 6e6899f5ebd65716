"""The ``xparl`` command: start, connect, status, stop and logs of xparl clusters."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parl.core.files import write_atomic
from parl.remote import logs as actor_logs
from parl.remote import protocol as P
from parl.remote.cluster import (
    LocalCluster,
    connected_workers,
    endpoint_key,
    find_security,
    is_alive,
    query,
    recorded_clusters,
    start_worker,
    stop_process,
    sweep_leftovers,
)
from parl.remote.config import (
    DataDirError,
    data_home,
    default_host,
    private_dir,
    writable_data_home,
)
from parl.remote.exceptions import AuthenticationError
from parl.remote.monitor import derived_port
from parl.remote.overview import cluster_overview
from parl.remote.security import SECRET_ENV, Mode, Security, is_loopback, read_secret_file

import click


def _gpu_option(value: str) -> str:
    ids = [g.strip() for g in value.split(",") if g.strip()]
    if not all(g.isdigit() for g in ids):
        raise click.BadParameter(f"{value!r} is not a comma-separated list of GPU ids such as 0,1")
    return ",".join(ids)


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As libzmq binds: connections of a master that just died (TIME_WAIT) do not count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _options(command: Callable[..., None], options: list[Any]) -> Callable[..., None]:
    for option in reversed(options):
        command = option(command)
    return command


_SECRET_FILE = click.option(
    "--secret-file",
    type=click.Path(dir_okay=False),
    default=None,
    help=f"Owner-only file holding the cluster secret (or set {SECRET_ENV}; default: the "
    "record of a cluster started on this machine).",
)
_INSECURE_PEER = click.option(
    "--insecure",
    is_flag=True,
    help="Talk to a cluster started with --insecure (no authentication); never a fallback.",
)


def worker_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options of a command that starts a worker: CPUs, GPUs, sockets and the secret."""
    return _options(
        command,
        [
            click.option(
                "--cpu_num",
                "--cpu-num",
                "cpu_num",
                type=click.IntRange(min=0),
                default=None,
                help="CPUs the worker offers (default: all CPUs of this machine).",
            ),
            click.option(
                "--gpu",
                default="",
                callback=lambda c, p, v: _gpu_option(v),
                help="GPU ids the worker offers, e.g. 0,1.",
            ),
            click.option("--host", default=None, help="Host the sockets bind (default 127.0.0.1)."),
            click.option("--advertise-host", default=None, help="Host other machines dial."),
            click.option("--port-range", default=None, help="LOW-HIGH range for the other ports."),
            _SECRET_FILE,
            click.option(
                "--insecure",
                is_flag=True,
                help="No authentication at all (loopback only; for trusted single-user machines).",
            ),
        ],
    )


def _data_folder(*parts: str) -> Path:
    """An owner-only folder under the data directory, which is checked writable first: a
    file in the way, a read-only folder or a full disk is one line saying what and where."""
    try:
        return private_dir(writable_data_home().joinpath(*parts))
    except DataDirError as exc:
        raise click.ClickException(str(exc)) from exc


def _security(address: str, secret_file: str | None, insecure: bool) -> Security:
    if insecure and secret_file:
        raise click.UsageError("--insecure and --secret-file exclude each other")
    try:
        return find_security(address, secret_file, insecure)
    except (ValueError, AuthenticationError) as exc:
        raise click.ClickException(str(exc)) from exc


def _query(address: str, security: Security, tag: bytes = P.STATUS, **kw: Any) -> dict[str, Any]:
    try:
        return query(address, tag, security=security, **kw)
    except AuthenticationError as exc:
        raise click.ClickException(str(exc)) from exc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(P.remote_version(), prog_name="xparl")
def main() -> None:
    """xparl: run @parl.remote_class actors on a cluster of CPUs (and GPUs)."""
    for line in sweep_leftovers():
        click.echo(f"xparl: {line}", err=True)


@main.command()
@click.option("--port", type=click.IntRange(1, 65535), required=True, help="Master port.")
@click.option(
    "--encrypt",
    is_flag=True,
    help="Encrypt actor traffic on loopback too (it always is beyond loopback).",
)
@click.option(
    "--monitor_port",
    "--monitor-port",
    "monitor_port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Port of the web monitor (default: the master's port + 100 as in PARL, or a free port "
    "if that one is taken; 0: a free port).",
)
@click.option("--no-monitor", is_flag=True, help="Start no web monitor.")
@worker_options
def start(
    port: int,
    encrypt: bool,
    monitor_port: int | None,
    no_monitor: bool,
    cpu_num: int | None,
    gpu: str,
    host: str | None,
    advertise_host: str | None,
    port_range: str | None,
    secret_file: str | None,
    insecure: bool,
) -> None:
    """Start a master and a local worker; return once the cluster is ready.

    Every connection proves it holds the cluster secret, kept in the cluster's owner-only
    record (reused when a master starts again on the same port, so running workers get back
    in); traffic beyond loopback is encrypted.
    """
    _data_folder("clusters")
    host = host or default_host()
    if insecure and (encrypt or secret_file):
        raise click.UsageError("--insecure excludes --encrypt and --secret-file")
    mode = Mode.INSECURE if insecure else Mode.ENCRYPT if encrypt else Mode.AUTH
    try:
        Security.for_mode(mode, "checking the host only").binding(host)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    existing = data_home() / "clusters" / str(port)
    survivors: list[dict[str, Any]] = []
    if (existing / "cluster.json").is_file():
        earlier = LocalCluster.load(existing)
        if earlier.is_running():
            raise click.ClickException(
                f"an xparl cluster recorded in {existing} already runs on port {port}; stop it "
                f"with `xparl stop --port {port}` or pick another port"
            )
        survivors = earlier.running_workers()
    if not _port_is_free(host, port):
        raise click.ClickException(f"port {port} on {host} is in use; pick another --port")
    monitor_at = _monitor_port(host, port, monitor_port, no_monitor)
    # A master started again: its workers still run, so it adds none unless asked to.
    default_cpus = 0 if survivors else (os.cpu_count() or 1)
    cpus = default_cpus if cpu_num is None else cpu_num
    try:
        secret = read_secret_file(secret_file) if secret_file else None
        cluster = LocalCluster.start(
            cpus,
            port=port,
            host=host,
            advertise_host=advertise_host,
            gpus=gpu,
            port_range=port_range,
            detach=True,
            mode=mode,
            secret=secret,
            monitor_port=monitor_at,
        )
    except (RuntimeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    _print_started(cluster, cpus, gpu, host)
    kept = len(cluster.workers) - (1 if cpus or gpu else 0)
    if kept:
        click.echo(
            f"  {kept} worker(s) of the earlier master on this port still run; with the same "
            "secret they register again and their actors keep serving."
        )


def _monitor_port(host: str, port: int, chosen: int | None, no_monitor: bool) -> int | None:
    """The port to start the monitor on (None: no monitor; 0: a free one)."""
    if no_monitor:
        if chosen is not None:
            raise click.UsageError("--no-monitor and --monitor_port exclude each other")
        return None
    if chosen is None:
        derived = derived_port(port)
        return derived if _port_is_free(host, derived) else 0
    if chosen == port:
        raise click.UsageError(f"--monitor_port {chosen} is the master's --port; pick another")
    if chosen and not _port_is_free(host, chosen):
        raise click.ClickException(
            f"port {chosen} on {host} is in use; pick another --monitor_port"
        )
    return chosen


def _print_started(cluster: LocalCluster, cpus: int, gpu: str, host: str) -> None:
    address, mode = cluster.address, cluster.security.mode
    click.echo(
        f"xparl cluster started at {address} ({cpus} CPUs"
        + (f", GPUs {gpu}" if gpu else "")
        + f"; security: {_describe_mode(mode, host)})."
    )
    insecure = mode is Mode.INSECURE  # clients must ask for that explicitly
    python_opt_in, cli_opt_in = (", insecure=True", " --insecure") if insecure else ("", "")
    click.echo(f"  connect from Python:  parl.connect({address!r}{python_opt_in})")
    click.echo(
        f"  status / stop:        xparl status{cli_opt_in} / xparl stop --port {cluster.port}"
    )
    click.echo(f"  logs:                 {cluster.data_dir}")
    if cluster.monitor_url:
        click.echo(f"  web monitor:          {cluster.monitor_url}")
        if not is_loopback(host):
            click.echo(
                "  the monitor speaks plain HTTP on a non-loopback address: reach it through an "
                "SSH tunnel or a TLS proxy (see the monitor guide), never over an open network."
            )
    if mode is Mode.INSECURE:
        click.echo("  no authentication: anyone on this machine can run code on this cluster.")
        return
    click.echo(f"  the cluster secret:   {cluster.secret_file} (owner-only)")
    if is_loopback(host):
        click.echo(
            "  this cluster listens on loopback only; to add other machines start it with "
            "--host <this machine's address>."
        )
        return
    click.echo(
        "  other machines: copy the secret file there (chmod 600) and run\n"
        f"    xparl connect --address {address} --secret-file FILE --host <their address>\n"
        f"  or set {SECRET_ENV}; in Python: parl.connect({address!r}, secret_file=FILE)"
    )


def _describe_mode(mode: Mode, host: str) -> str:
    if mode is Mode.INSECURE:
        return "none (--insecure)"
    if mode is Mode.ENCRYPT or not is_loopback(host):
        return "authenticated and encrypted"
    return "authenticated (add --encrypt to also encrypt on loopback)"


@main.command()
@click.option("--address", required=True, help="HOST:PORT of the master.")
@worker_options
def connect(
    address: str,
    cpu_num: int | None,
    gpu: str,
    host: str | None,
    advertise_host: str | None,
    port_range: str | None,
    secret_file: str | None,
    insecure: bool,
) -> None:
    """Add a worker with this machine's CPUs (and GPUs) to the cluster at ADDRESS.

    The worker keeps asking a master that does not answer (busy, or not started yet) for
    XPARL_REGISTER_TIMEOUT seconds (120 by default), waiting longer each time.
    """
    folder = _data_folder("connected", address.replace(":", "_"))
    security = _security(address, secret_file, insecure)
    cpus = (os.cpu_count() or 1) if cpu_num is None else cpu_num
    try:
        record = start_worker(
            address,
            cpus,
            folder,
            security=security,
            gpus=gpu,
            host=host,
            advertise_host=advertise_host,
            port_range=port_range,
            detach=True,
        )
    except (RuntimeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    write_atomic(folder / f"worker-{record['worker_id']}.json", json.dumps(record))
    click.echo(
        f"worker {record['worker_id']} (pid {record['pid']}) added {cpus} CPUs"
        + (f", GPUs {gpu}" if gpu else "")
        + f" to the cluster at {address}."
    )


def _addresses(address: str | None) -> list[str]:
    if address:
        return [address]
    found = [c.address for c in recorded_clusters() if c.is_running()]
    known = {_same_cluster_key(a) for a in found}
    for _, record in connected_workers():
        key = _same_cluster_key(record["master"])
        if key not in known:
            known.add(key)
            found.append(record["master"])
    return found


def _same_cluster_key(address: str) -> tuple[str, str]:
    """``host:port`` with loopback names as one host (:func:`endpoint_key`), and other names
    resolved, so one cluster reached by two names is listed once."""
    host, port = endpoint_key(address)
    if host == "loopback":
        return (host, port)
    try:
        return (socket.gethostbyname(host), port)
    except OSError:
        return (host, port)


def _monitor_urls() -> dict[str, str]:
    """The monitor URLs (with their tokens) of the clusters recorded on this machine."""
    return {c.address: c.monitor_url for c in recorded_clusters() if c.monitor_url}


def _print_status(status: dict[str, Any], actors: list[dict[str, Any]]) -> None:
    click.echo(
        f"Cluster {status['address']} (parl-remote {status['version']}, Python "
        f"{status['python']}, security {status['security']}): {status['cpus_used']} used CPUs, "
        f"{status['cpus_vacant']} vacant CPUs, {status['gpus_used']} used GPUs, "
        f"{status['gpus_vacant']} vacant GPUs; {status['counts']['workers']} worker(s), "
        f"{status['counts']['clients']} client(s), {status['counts']['actors']} actor(s)."
    )
    if status["behind"]:
        click.echo(
            f"  the master is behind: heartbeats wait {status['lag_s']} s before it reads "
            "them, so what it shows is that old"
        )
    if any(status["counts"][k] > len(status[k]) for k in ("workers", "clients", "actors")):
        click.echo(f"  (at most {status['limit']} of each are listed below)")
    for w in status["workers"]:
        gpus = f", GPUs {','.join(w['gpus'])} ({len(w['gpus_used'])} used)" if w["gpus"] else ""
        click.echo(
            f"  worker {w['worker_id']} on {w['hostname']} ({w['address']}, pid {w['pid']}):"
            f" {w['cpus_used']}/{w['cpus_total']} CPUs used{gpus}, "
            f"{w['idle_jobs']} warm jobs; logs in {w['log_dir']}"
        )
    for w in status["lost_workers"]:
        click.echo(
            f"  worker {w['worker_id']} on {w['hostname']}: silent for {w['silent_s']} s "
            "(not scheduled; its actors keep serving)"
        )
    for c in status["clients"]:
        click.echo(
            f"  client {c['client']} on {c['hostname']} (pid {c['pid']}): "
            f"{c['actors']} actor(s), script {c['script']}, {c['connected_s']} s"
        )
    for a in actors:
        if a["state"] == "released":
            continue
        error = a["error"] or {}
        problem = f"{error['type']}: {error['message']}" if error else a["message"]
        click.echo(
            f"  actor {a['job_id']} ({a['class_name'] or '?'}): {a['state']}, client "
            f"{a['client']}, worker {a['worker_id']}"
            + (f", GPUs {','.join(a['gpus'])}" if a["gpus"] else "")
            + (f"; {problem.splitlines()[0][:200]}" if problem else "")
        )
    refused = status["refused_connections"] + status["refused_requests"]
    if refused or status["bad_messages"]:
        click.echo(
            f"  refused {refused} connection(s)/request(s) (a wrong or no cluster secret, or "
            f"a request it may not make), dropped {status['bad_messages']} malformed message(s)"
        )
    if status.get("handshakes_hung_up"):
        click.echo(
            f"  {status['handshakes_hung_up']} connection(s) hung up during their handshake "
            "(peers that gave up waiting and redialed, or port scans; not a secret mismatch)"
        )
    url = _monitor_urls().get(status["address"])
    click.echo(f"  web monitor: {url}" if url else "  web monitor: none started from this machine")


@main.command()
@click.option("--address", default=None, help="HOST:PORT of a master (default: local clusters).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print what the web monitor shows (cluster, workers, clients, actors) as JSON.",
)
@_SECRET_FILE
@_INSECURE_PEER
def status(address: str | None, as_json: bool, secret_file: str | None, insecure: bool) -> None:
    """Show CPUs used/vacant, workers, clients and actors of the cluster(s), each once."""
    addresses = _addresses(address)
    if not addresses:
        click.echo(
            "No xparl cluster recorded on this machine; start one with "
            "`xparl start --port PORT` or pass --address HOST:PORT."
        )
        return
    failed = False
    shown: set[tuple[str, int]] = set()
    overviews = []
    for each in addresses:
        try:
            security = _security(each, secret_file, insecure)
            info = _query(each, security)
            if (info["address"], info["pid"]) in shown:
                continue  # the same master under another name
            shown.add((info["address"], info["pid"]))
            overview = cluster_overview(each, security)
            overview["cluster"]["monitor_url"] = _monitor_urls().get(info["address"])
            overviews.append(overview)
        except ConnectionError as exc:
            click.echo(f"Cluster {each}: not reachable ({exc}).", err=True)
            failed = True
            continue
        except (AuthenticationError, click.ClickException) as exc:
            if address:
                raise click.ClickException(str(exc)) from exc
            click.echo(f"Cluster {each}: {exc}", err=True)  # the other clusters are still shown
            failed = True
            continue
        if not as_json:
            _print_status(info, overview["actors"])
    if as_json:
        click.echo(json.dumps(overviews, indent=1))
    if failed:
        raise SystemExit(1)


@main.command()
@click.option(
    "--port",
    type=int,
    default=None,
    help="Stop only the cluster on this port (default: every cluster recorded here, except the "
    "embedded clusters of programs still running).",
)
def stop(port: int | None) -> None:
    """Stop clusters started from this machine and workers connected from it, by recorded pid."""
    stopped = 0
    for cluster in recorded_clusters():
        if port is not None and cluster.port != port:
            continue
        if port is None and cluster.embedded and cluster.owner_alive():
            click.echo(
                f"left the cluster at {cluster.address} running: it belongs to the program with "
                f"pid {cluster.owner_pid} (stop it with `xparl stop --port {cluster.port}`)"
            )
            continue
        if cluster.is_running():
            stopped += 1
            click.echo(f"stopped the cluster at {cluster.address}")
        cluster.stop()
        (cluster.data_dir / "cluster.json").unlink(missing_ok=True)
    for path, record in connected_workers():
        if port is not None and not record["master"].endswith(f":{port}"):
            continue
        stop_process(record)
        path.unlink(missing_ok=True)
        stopped += 1
        click.echo(f"stopped the worker {record['worker_id']} connected to {record['master']}")
    if not stopped:
        click.echo(
            "nothing to stop"
            + (f" on port {port}" if port else "")
            + f" (recorded under {data_home()})"
        )


@main.command()
@click.argument("job_id", required=False)
@click.option("--address", default=None, help="HOST:PORT of the master (default: local ones).")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="List the logs of stopped clusters and workers too (default: running ones only).",
)
@click.option(
    "--tail",
    type=click.IntRange(min=0),
    default=0,
    help=f"Print only the last N lines (at most {actor_logs.MAX_TAIL_BYTES // 2**20} MiB).",
)
@_SECRET_FILE
@_INSECURE_PEER
def logs(
    job_id: str | None,
    address: str | None,
    show_all: bool,
    tail: int,
    secret_file: str | None,
    insecure: bool,
) -> None:
    """Print the stdout/stderr log of the actor JOB_ID; without JOB_ID, list the actor logs of
    the clusters and workers running on this machine (--all: of stopped ones too)."""
    if job_id is None:
        _list_logs(show_all)
        return
    for each in _addresses(address):
        try:
            security = _security(each, secret_file, insecure)
            info = _query(each, security)
        except ConnectionError:
            continue
        except click.ClickException:
            if address:
                raise
            continue  # a cluster this command may not reach; the local logs are still read
        for worker in info["workers"] + info["lost_workers"]:
            try:
                request = {"job_id": job_id, "lines": tail}
                answer = _query(worker["address"], security, P.READ_LOG, payload=request)
            except ConnectionError:
                continue
            if answer.get("found"):
                _echo_log(answer["log"], answer.get("truncated", False), answer.get("path"))
                return
    for path in data_home().glob(f"*/*/workers/*/logs/{job_id}.log"):
        text, cut = actor_logs.tail(path, tail)
        _echo_log(text, cut, str(path))
        return
    raise click.ClickException(f"no log for actor {job_id!r}; list them with `xparl logs`")


def _list_logs(show_all: bool) -> None:
    """Print ``JOB_ID<tab>path`` for each actor log of the clusters and connected workers that
    run (``show_all``: of every folder under the data directory)."""
    live = [c.data_dir for c in recorded_clusters() if c.is_running() or c.running_workers()]
    live += sorted({path.parent for path, record in connected_workers() if is_alive(record)})
    pattern = "workers/*/logs/*.log"
    names = sorted(p for folder in live for p in Path(folder).glob(pattern))
    if show_all:
        names = sorted(data_home().glob(f"*/*/{pattern}"))
    for path in names:
        click.echo(f"{path.stem}\t{path}")
    if names:
        return
    stopped = len(list(data_home().glob(f"*/*/{pattern}")))
    click.echo(
        f"no actor logs of running clusters under {data_home()}"
        + (f"; `xparl logs --all` lists {stopped} of stopped ones" if stopped else "")
    )


def _echo_log(text: str, truncated: bool, path: str | None) -> None:
    if truncated:
        click.echo(f"[showing the last {actor_logs.MAX_TAIL_BYTES // 2**20} MiB of {path}]")
    click.echo(text, nl=not text.endswith("\n"))


if __name__ == "__main__":
    main()
