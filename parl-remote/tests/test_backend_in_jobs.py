"""An actor runs on its client's backend: the client's ``PARL_BACKEND`` travels with the class.

PARL 2.x's torch programs (A2C's and ES's actors, AlphaZero) define ``class Net(parl.Model)`` at
the top of a module their actor imports; in the actor's process that line resolves
``parl.Model`` there, so the process must choose what the client chose, not what the cluster
happened to be started with.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Script

pytest.importorskip("torch")
pytest.importorskip("paddle")

NET = """
import parl
import torch


class Net(parl.Model):  # resolved when the actor's process imports this module
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, obs):
        return self.fc(obs)
"""

ACTOR = """
import os

import parl
import torch

from torch_net import Net


@parl.remote_class
class Actor:
    def __init__(self):
        self.net = Net()

    def describe(self):
        shape = tuple(self.net(torch.ones(1, 3)).shape)
        return parl.get_backend(), isinstance(self.net, torch.nn.Module), shape, os.getpid()
"""

CLIENT = """
import os
import sys

import parl

from remote_actor import Actor

parl.connect(sys.argv[1])
backend, is_torch, shape, pid = Actor().describe()
print("ACTOR", backend, is_torch, shape, pid != os.getpid(), flush=True)
"""


def _program(folder: Path) -> Path:
    folder.mkdir()
    (folder / "torch_net.py").write_text(NET)
    (folder / "remote_actor.py").write_text(ACTOR)
    (folder / "client.py").write_text(CLIENT)
    return folder / "client.py"


def test_a_torch_client_gets_torch_actors_from_a_cluster_started_without_parl_backend(
    start_cluster: Callable[..., object],
    scripts: Callable[..., Script],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PARL_BACKEND", raising=False)  # the cluster's processes inherit this
    cluster = start_cluster(1)
    client = scripts(
        _program(tmp_path / "program"),
        cluster.address,  # type: ignore[attr-defined]
        env={**os.environ, "PARL_BACKEND": "torch"},
    )
    last = client.finish(timeout=60)
    assert client.proc.returncode == 0, "\n".join(client.lines)
    assert last == "ACTOR torch True (1, 2) True"


def test_a_framework_parl_does_not_run_on_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from parl.remote.framework import adopt_framework, client_framework

    monkeypatch.setenv("PARL_BACKEND", "paddle")
    with pytest.raises(ValueError, match="'tensorflow'; PARL runs on paddle, torch"):
        adopt_framework("tensorflow")
    adopt_framework(None)  # a client without a framework leaves the process as it is
    assert os.environ["PARL_BACKEND"] == "paddle" == client_framework()
    adopt_framework("torch")
    assert os.environ["PARL_BACKEND"] == "torch" == client_framework()
