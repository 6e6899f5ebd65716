"""Files written by the previous version (the twin classes, before DQN was written once) load.

``fixtures/`` holds, for paddle and for torch, a weights file (``Agent.save``) and a training
checkpoint (``Agent.save_checkpoint``) of a DQN agent trained three steps by the commit before
the change (8673b88), and the Q values it gave on five observations. The classes written once
must load both kinds on each framework and give the same Q values.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parl_algos_dqn import DQN, DQNAgent, QNetwork

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "dqn-expected.json").read_text())
BACKENDS = [
    pytest.param("paddle", id="paddle"),
    pytest.param("torch", id="torch", marks=pytest.mark.torch),
]


def _agent(backend: str) -> DQNAgent:
    pytest.importorskip(backend)
    return DQNAgent(
        DQN(QNetwork(4, 2, (8,), backend=backend), lr=1e-2),
        act_dim=2,
        target_update_interval=2,
        seed=5,
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["weights", "ckpt"])
def test_a_file_of_the_previous_version_loads(backend, kind) -> None:
    agent = _agent(backend)
    obs = np.asarray(EXPECTED["obs"], dtype=np.float32)
    expected = np.asarray(EXPECTED["q_values"][backend], dtype=np.float32)
    assert not np.allclose(agent.q_values(obs), expected), "a fresh agent would prove nothing"
    path = FIXTURES / f"dqn-{backend}.{kind}"
    if kind == "weights":
        agent.restore(path)
    else:
        agent.load_checkpoint(path)
        assert agent.learn_steps == 3
    np.testing.assert_allclose(agent.q_values(obs), expected, rtol=1e-6, atol=1e-6)
