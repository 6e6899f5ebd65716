"""MAPPO's rollout workers: in this process and as real xparl actors on an embedded cluster."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import fields

import parl
import parl.remote
from parl.core.errors import BackendError
from parl.env.multiagent_env import ParticleEnv
from parl.remote.testing import processes_gone, wait_for

import cloudpickle
import numpy as np
import paddle
import pytest

from parl_algos_marl import MAPPO, MAPPOAgent, MAPPOModel
from parl_algos_marl.rollout import Rollouts, RolloutWorker, TeamRollout

# The actors build their env and agent from this module's functions: send them by value, as
# cloudpickle does for a script's own functions (this test module is not importable there).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

NUM_ENVS, NUM_STEPS = 4, 30  # 30 steps cross a 25-step episode end (reset, final values)


def make_env():
    return ParticleEnv("simple_spread")


def make_agent(backend: str) -> MAPPOAgent:
    model = MAPPOModel(18, 54, 5, 3, hidden_sizes=(16,), backend=backend)
    return MAPPOAgent(MAPPO(model), 3)


def new_weights(agent: MAPPOAgent, rng: np.random.Generator) -> dict[str, np.ndarray]:
    weights = agent.get_weights()
    return {k: rng.normal(0, 0.5, v.shape).astype(v.dtype) for k, v in weights.items()}


def assert_same(a: TeamRollout, b: TeamRollout) -> None:
    """The same steps: actions, rewards and flags equal; the network's outputs (values, log
    probabilities) equal to float32 rounding, which may differ between two processes' kernels."""
    for field in fields(TeamRollout):
        mine, theirs = np.asarray(getattr(a, field.name)), np.asarray(getattr(b, field.name))
        if field.name in ("values", "log_probs", "final_values", "next_values"):
            np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-5, err_msg=field.name)
        else:
            np.testing.assert_array_equal(mine, theirs, field.name)


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """An embedded xparl cluster with 2 CPUs on 127.0.0.1, stopped afterwards."""
    monkeypatch.setenv("XPARL_HOME", str(tmp_path / "xparl"))
    monkeypatch.setenv("XPARL_HOST", "127.0.0.1")
    monkeypatch.setenv("XPARL_HEARTBEAT_INTERVAL", "0.1")
    monkeypatch.setenv("XPARL_RESOURCE_TIMEOUT", "60")
    parl.connect(cpu_num=2)
    yield
    parl.remote.disconnect()


@pytest.mark.slow
def test_remote_workers_give_local_batches_replace_a_dead_one_and_exit(cluster):
    rng = np.random.default_rng(0)
    rollouts = Rollouts(make_env, make_agent, 2 * NUM_ENVS, num_workers=2, seed=7)
    local = [RolloutWorker(make_env, make_agent, NUM_ENVS, seed) for seed in (7, 7 + NUM_ENVS)]
    pids = rollouts.pids()
    assert len(set(pids)) == 2 and os.getpid() not in pids
    for _ in range(2):  # a second update: the workers kept their envs and random streams
        weights = new_weights(local[0].agent, rng)
        remote = rollouts.collect(weights, NUM_STEPS)
        assert_same(remote, TeamRollout.concatenate([w.rollout(weights, NUM_STEPS) for w in local]))
    assert remote.rewards.shape == (NUM_STEPS, 2 * NUM_ENVS, 3)
    assert len(remote.episode_returns) == 2 * NUM_ENVS

    rollouts.max_replacements = 1
    os.kill(pids[0], signal.SIGKILL)
    batch = rollouts.collect(weights, NUM_STEPS)
    assert rollouts.replaced == 1 and batch.rewards.shape == (NUM_STEPS, 2 * NUM_ENVS, 3)
    replacement = rollouts.pids()[0]
    assert replacement not in pids
    os.kill(replacement, signal.SIGKILL)
    with pytest.raises(RuntimeError, match="max_replacements=1"):
        rollouts.collect(weights, NUM_STEPS)

    rollouts.close()
    every = [*pids, replacement]
    wait_for(lambda: processes_gone(every), 30, f"the workers {every} to exit once released")


def test_a_worker_keeps_its_own_random_stream():
    paddle.seed(1)
    expected = paddle.rand([4]).numpy()
    paddle.seed(1)
    worker = RolloutWorker(make_env, make_agent, 2, seed=3)
    weights = worker.agent.get_weights()
    first = worker.rollout(weights, 5)
    np.testing.assert_array_equal(paddle.rand([4]).numpy(), expected, "the caller's stream moved")
    twin = RolloutWorker(make_env, make_agent, 2, seed=3)
    paddle.seed(99)  # the caller's stream moves; the worker's does not follow it
    assert_same(first, twin.rollout(weights, 5))
    worker.close()
    twin.close()


def test_bad_settings_are_clear_errors():
    with pytest.raises(ValueError, match="multiple of num_workers"):
        Rollouts(make_env, make_agent, 5, num_workers=2)
    with pytest.raises(ValueError, match="num_envs"):
        Rollouts(make_env, make_agent, 0)
    with pytest.raises(TypeError, match="MAPPOAgent"):
        RolloutWorker(make_env, lambda backend: object(), 1, seed=0)
    with pytest.raises(BackendError, match="unknown backend 'jax'"):
        Rollouts(make_env, make_agent, 1, backend="jax")


@pytest.mark.torch
def test_a_worker_refuses_an_agent_of_another_framework():
    with pytest.raises(ValueError, match=r"make_agent\('torch'\) built a paddle agent"):
        RolloutWorker(make_env, lambda backend: make_agent("paddle"), 1, seed=0, backend="torch")


@pytest.mark.torch
def test_workers_build_the_learners_framework_not_the_one_their_process_selects(monkeypatch):
    monkeypatch.setenv("PARL_BACKEND", "paddle")
    rollouts = Rollouts(make_env, make_agent, 2, seed=3, backend="torch")
    worker = rollouts.workers[0]
    assert worker.agent.alg.backend.name == "torch"
    weights = worker.agent.get_weights()
    twin = RolloutWorker(make_env, make_agent, 2, seed=3, backend="torch")
    assert_same(rollouts.collect(weights, 5), twin.rollout(weights, 5))
    rollouts.close()
    twin.close()


@pytest.fixture
def paddle_selected(monkeypatch):
    """Every process started from here on selects paddle by itself (``PARL_BACKEND``)."""
    monkeypatch.setenv("PARL_BACKEND", "paddle")


@pytest.mark.slow
@pytest.mark.torch
def test_remote_workers_roll_out_on_the_learners_framework(paddle_selected, cluster):
    rollouts = Rollouts(make_env, make_agent, NUM_ENVS, num_workers=1, seed=7, backend="torch")
    local = RolloutWorker(make_env, make_agent, NUM_ENVS, 7, backend="torch")
    weights = new_weights(local.agent, np.random.default_rng(0))
    assert_same(rollouts.collect(weights, NUM_STEPS), local.rollout(weights, NUM_STEPS))
    pids = rollouts.pids()
    rollouts.close()
    local.close()
    wait_for(lambda: processes_gone(pids), 30, f"the worker {pids} to exit once released")
