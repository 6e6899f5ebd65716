"""The ``xparl`` command: start, connect, status, stop and logs of xparl clusters."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parl.remote import protocol as P
from parl.remote.cluster import (
    LocalCluster,
    connected_workers,
    query,
    recorded_clusters,
    start_worker,
    stop_process,
)
from parl.remote.config import data_home, default_host

import click


def _gpu_option(value: str) -> str:
    ids = [g.strip() for g in value.split(",") if g.strip()]
    if not all(g.isdigit() for g in ids):
        raise click.BadParameter(f"{value!r} is not a comma-separated list of GPU ids such as 0,1")
    return ",".join(ids)


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def worker_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options of a command that starts a worker: CPUs, GPUs and where its sockets live."""
    options = [
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
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(P.remote_version(), prog_name="xparl")
def main() -> None:
    """xparl: run @parl.remote_class actors on a cluster of CPUs (and GPUs)."""


@main.command()
@click.option("--port", type=click.IntRange(1, 65535), required=True, help="Master port.")
@worker_options
def start(
    port: int,
    cpu_num: int | None,
    gpu: str,
    host: str | None,
    advertise_host: str | None,
    port_range: str | None,
) -> None:
    """Start a master and a local worker; return once the cluster is ready."""
    host = host or default_host()
    existing = data_home() / "clusters" / str(port)
    if (existing / "cluster.json").is_file() and LocalCluster.load(existing).is_running():
        raise click.ClickException(
            f"an xparl cluster recorded in {existing} already runs on port {port}; stop it with "
            f"`xparl stop --port {port}` or pick another port"
        )
    if not _port_is_free(host, port):
        raise click.ClickException(f"port {port} on {host} is in use; pick another --port")
    cpus = (os.cpu_count() or 1) if cpu_num is None else cpu_num
    try:
        cluster = LocalCluster.start(
            cpus,
            port=port,
            host=host,
            advertise_host=advertise_host,
            gpus=gpu,
            port_range=port_range,
            detach=True,
        )
    except (RuntimeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(
        f"xparl cluster started at {cluster.address} ({cpus} CPUs"
        + (f", GPUs {gpu}" if gpu else "")
        + ")."
    )
    click.echo(f"  connect from Python:  parl.connect({cluster.address!r})")
    click.echo(f"  add CPUs:             xparl connect --address {cluster.address} --cpu_num N")
    click.echo(f"  status / stop:        xparl status / xparl stop --port {port}")
    click.echo(f"  logs:                 {cluster.data_dir}")


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
) -> None:
    """Add a worker with this machine's CPUs (and GPUs) to the cluster at ADDRESS."""
    try:
        status = query(address, P.STATUS)
    except ConnectionError as exc:
        raise click.ClickException(
            f"{exc}: no xparl master there. Check the address, or start one with "
            "`xparl start --port PORT`."
        ) from exc
    cpus = (os.cpu_count() or 1) if cpu_num is None else cpu_num
    folder = data_home() / "connected" / address.replace(":", "_")
    try:
        record = start_worker(
            address,
            cpus,
            folder,
            gpus=gpu,
            host=host,
            advertise_host=advertise_host,
            port_range=port_range,
            detach=True,
        )
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from exc
    (folder / f"worker-{record['worker_id']}.json").write_text(json.dumps(record))
    click.echo(
        f"worker {record['worker_id']} (pid {record['pid']}) added {cpus} CPUs"
        + (f", GPUs {gpu}" if gpu else "")
        + f" to the cluster at {status['address']}."
    )


def _addresses(address: str | None) -> list[str]:
    if address:
        return [address]
    found = [c.address for c in recorded_clusters() if c.is_running()]
    found += sorted({r["master"] for _, r in connected_workers()} - set(found))
    return found


def _print_status(status: dict[str, Any]) -> None:
    click.echo(
        f"Cluster {status['address']} (parl-remote {status['version']}, Python "
        f"{status['python']}): {status['cpus_used']} used CPUs, {status['cpus_vacant']} vacant "
        f"CPUs, {status['gpus_used']} used GPUs, {status['gpus_vacant']} vacant GPUs; "
        f"{len(status['workers'])} worker(s), {len(status['clients'])} client(s), "
        f"{len(status['actors'])} actor(s)."
    )
    for w in status["workers"]:
        gpus = f", GPUs {','.join(w['gpus'])} ({len(w['gpus_used'])} used)" if w["gpus"] else ""
        click.echo(
            f"  worker {w['worker_id']} on {w['hostname']} ({w['address']}, pid {w['pid']}):"
            f" {w['cpus_used']}/{w['cpus_total']} CPUs used{gpus}, "
            f"{w['idle_jobs']} warm jobs; logs in {w['log_dir']}"
        )
    for c in status["clients"]:
        click.echo(
            f"  client {c['client_id'][:8]} on {c['hostname']} (pid {c['pid']}): "
            f"{c['actors']} actor(s), script {c['script']}, {c['connected_s']} s"
        )
    for a in status["actors"]:
        click.echo(
            f"  actor {a['job_id']}: client {a['client_id'][:8]}, worker {a['worker_id']}"
            + (f", GPUs {','.join(a['gpus'])}" if a["gpus"] else "")
        )
    click.echo("  monitor: none (the web monitor is not part of this release; use xparl status)")


@main.command()
@click.option("--address", default=None, help="HOST:PORT of a master (default: local clusters).")
@click.option("--json", "as_json", is_flag=True, help="Print the raw status as JSON.")
def status(address: str | None, as_json: bool) -> None:
    """Show CPUs used/vacant, workers, clients and actors of the cluster(s)."""
    addresses = _addresses(address)
    if not addresses:
        click.echo(
            "No xparl cluster recorded on this machine; start one with "
            "`xparl start --port PORT` or pass --address HOST:PORT."
        )
        return
    failed = False
    for each in addresses:
        try:
            info = query(each, P.STATUS)
        except ConnectionError as exc:
            click.echo(f"Cluster {each}: not reachable ({exc}).", err=True)
            failed = True
            continue
        if as_json:
            click.echo(json.dumps(info, indent=1))
        else:
            _print_status(info)
    if failed:
        raise SystemExit(1)


@main.command()
@click.option(
    "--port",
    type=int,
    default=None,
    help="Stop only the cluster on this port (default: every cluster recorded here).",
)
def stop(port: int | None) -> None:
    """Stop clusters started from this machine and workers connected from it, by recorded pid."""
    stopped = 0
    for cluster in recorded_clusters():
        if port is not None and cluster.port != port:
            continue
        if cluster.is_running():
            cluster.stop()
            stopped += 1
            click.echo(f"stopped the cluster at {cluster.address}")
        else:
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
@click.option("--tail", type=click.IntRange(min=0), default=0, help="Print only the last N lines.")
def logs(job_id: str | None, address: str | None, tail: int) -> None:
    """Print the stdout/stderr log of the actor JOB_ID; without JOB_ID, list actor logs."""
    if job_id is None:
        folders = [c.data_dir for c in recorded_clusters()]
        folders += sorted({p.parent for p, _ in connected_workers()})
        names = sorted(p for folder in folders for p in Path(folder).glob("workers/*/logs/*.log"))
        if not names:
            click.echo(f"no actor logs under {data_home()}")
        for path in names:
            click.echo(f"{path.stem}\t{path}")
        return
    for each in _addresses(address):
        try:
            info = query(each, P.STATUS)
        except ConnectionError:
            continue
        for worker in info["workers"]:
            try:
                answer = query(worker["address"], P.READ_LOG, {"job_id": job_id, "lines": tail})
            except ConnectionError:
                continue
            if answer.get("found"):
                click.echo(answer["log"], nl=not answer["log"].endswith("\n"))
                return
    for path in data_home().glob(f"*/*/workers/*/logs/{job_id}.log"):
        text = path.read_text(errors="replace")
        click.echo("\n".join(text.splitlines()[-tail:]) if tail else text, nl=False)
        return
    raise click.ClickException(f"no log for actor {job_id!r}; list them with `xparl logs`")


if __name__ == "__main__":
    main()
