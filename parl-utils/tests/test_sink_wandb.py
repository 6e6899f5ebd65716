"""The W&B sink against the real wandb library in offline mode, reading back its run files."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from parl.utils import summary

import psutil
import pytest
import wandb
from wandb.proto import wandb_internal_pb2

# A .wandb file: a 7-byte header (":W&B", magic, version), then LevelDB's log format: 32 KiB
# blocks of chunks, each with a 7-byte header (crc32, length, type) and a piece of one record.
HEADER_SIZE = 7
BLOCK_SIZE = 32 * 1024
CHUNK_HEADER = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> Iterator[wandb_internal_pb2.Record]:
    """The protobuf records of a W&B transaction log, in the order written."""
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is no W&B run file"
    position, pieces = HEADER_SIZE, []
    while position + CHUNK_HEADER.size <= len(data):
        left_in_block = BLOCK_SIZE - position % BLOCK_SIZE
        _, length, kind = CHUNK_HEADER.unpack_from(data, position)
        if left_in_block < CHUNK_HEADER.size or (kind, length) == (0, 0):
            position += left_in_block  # the block's zero padding
            continue
        start = position + CHUNK_HEADER.size
        pieces.append(data[start : start + length])
        position = start + length
        if kind in (FULL, LAST):
            yield wandb_internal_pb2.Record.FromString(b"".join(pieces))
            pieces = []


def decoded(items: Iterable[Any]) -> dict[str, Any]:
    """Config or history items (``key`` or ``nested_key``, ``value_json``) as a dict."""
    return {"/".join(i.nested_key or [i.key]): json.loads(i.value_json) for i in items}


def finished(path: Path, timeout: float = 30.0) -> None:
    """Wait until the run file ends with its ``exit`` record: W&B's service process writes the
    file after ``run.finish()`` returns (about 0.2 s later here), so a file read at once may
    still be empty."""
    deadline = time.monotonic() + timeout
    while not any(r.WhichOneof("record_type") == "exit" for r in records(path)):
        assert time.monotonic() < deadline, f"{path} got no exit record within {timeout} s"
        time.sleep(0.05)


def read_run(logdir: Path) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """The offline run under ``logdir``: its name, its config, and its history rows."""
    (path,) = logdir.glob("wandb/offline-run-*/run-*.wandb")
    finished(path)
    name, config, rows = "", {}, []
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            name = record.run.display_name
            config.update(decoded(record.run.config.update))
        elif kind == "config":
            config.update(decoded(record.config.update))
        elif kind == "history":
            row = decoded(record.history.item)
            rows.append({k: v for k, v in row.items() if not k.startswith("_")})
    return name, config, rows


@pytest.fixture(autouse=True)
def _wandb_offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PARL_ENABLED_SINKS", "wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_DIR", raising=False)
    yield
    summary.close()
    wandb.teardown()  # stops the wandb-core service process that wandb.init started


def test_metrics_and_params_reach_an_offline_run_in_the_logdir(tmp_path: Path) -> None:
    logdir = tmp_path / "ppo-seed0"
    summary.set_logdir(logdir)
    summary.add_params({"lr": 3e-4, "env_id": "CartPole-v1", "hidden_sizes": [64, 64]})
    summary.add_scalar("charts/episodic_return", 21.5, step=100)
    summary.add_scalars({"losses/value": 0.25, "charts/episodic_return": 30.0}, step=200)
    summary.add_scalar("eval/episodic_return", 9.0, step=200)  # a repeated step is kept
    summary.close()

    name, config, rows = read_run(logdir)
    assert name == "ppo-seed0"
    assert {k: config[k] for k in ("lr", "env_id", "hidden_sizes")} == {
        "lr": 3e-4,
        "env_id": "CartPole-v1",
        "hidden_sizes": [64, 64],
    }
    assert rows == [
        {"charts/episodic_return": 21.5, "global_step": 100},
        {"losses/value": 0.25, "charts/episodic_return": 30.0, "global_step": 200},
        {"eval/episodic_return": 9.0, "global_step": 200},
    ]


def test_each_logdir_gets_its_own_run_and_the_service_stops(tmp_path: Path) -> None:
    for seed in (0, 1):
        summary.set_logdir(tmp_path / f"seed{seed}")
        summary.add_scalar("charts/SPS", 1000.0 + seed, step=seed)
    summary.close()
    for seed in (0, 1):
        name, _, rows = read_run(tmp_path / f"seed{seed}")
        assert (name, rows) == (f"seed{seed}", [{"charts/SPS": 1000.0 + seed, "global_step": seed}])

    wandb.teardown()
    leftover = [p.name() for p in psutil.Process().children(recursive=True)]
    assert not any("wandb" in name for name in leftover), leftover


def test_a_run_left_open_is_finished_at_exit(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from parl.utils import summary\n"
        "summary.set_logdir(sys.argv[1])\n"
        "summary.add_scalar('charts/episodic_return', 1.0, step=1)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (path,) = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    exits = [r.exit.exit_code for r in records(path) if r.WhichOneof("record_type") == "exit"]
    assert exits == [0]
    assert read_run(tmp_path)[2] == [{"charts/episodic_return": 1.0, "global_step": 1}]
