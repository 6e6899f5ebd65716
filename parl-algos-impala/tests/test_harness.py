"""The actor-learner system with real xparl processes on an embedded cluster (127.0.0.1)."""

from __future__ import annotations

import csv
import os
import signal
import sys
from functools import partial

import parl
import parl.remote
from parl.core.neutral import Model
from parl.remote.testing import processes_gone as gone
from parl.remote.testing import wait_for
from parl.testing import IdentityEnv, identity_score
from parl.utils import summary

import cloudpickle
import gymnasium as gym
import numpy as np
import psutil
import pytest

from parl_algos_impala import IMPALA
from parl_algos_impala.harness import METRICS, ActorLearner, RolloutActor

# The actors build their model and env from this module's functions: send them by value, as
# cloudpickle does for a script's own functions (this test module is not importable there).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

FAST_ENV = {
    "XPARL_HEARTBEAT_INTERVAL": "0.1",
    # A killed job's connection closes at once; heartbeats only catch hung peers, and on a
    # loaded 2-core machine a job busy starting up could miss 2.5 s of them.
    "XPARL_HEARTBEAT_TIMEOUT": "10",
    "XPARL_CONNECT_TIMEOUT": "5",
    "XPARL_RESOURCE_TIMEOUT": "20",
    "XPARL_HOST": "127.0.0.1",
}
STEPS = 5


class LinearActorCritic(Model):
    def __init__(self, *, backend: str | None = None) -> None:
        super().__init__()
        self.pi = self.nn.Linear(4, 4)
        self.v = self.nn.Linear(4, 1)

    def policy(self, obs):
        return self.pi(obs)

    def value(self, obs):
        return self.v(obs)


def make_env() -> gym.Env:
    return IdentityEnv(4, episode_length=10)


def alive(pids) -> list[tuple[int, str]]:
    found = []
    for pid in pids:
        try:
            found.append((pid, psutil.Process(pid).status()))
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture
def embedded(tmp_path, monkeypatch):
    """Short xparl timeouts; the embedded cluster the harness starts is stopped afterwards."""
    for key, value in FAST_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("XPARL_HOME", str(tmp_path / "xparl"))
    summary.set_logdir(tmp_path / "metrics")
    yield tmp_path
    parl.remote.disconnect()


def make_system(backend: str = "paddle", **options) -> ActorLearner:
    parl.set_seed(0, backend=backend)
    make_model = partial(LinearActorCritic, backend=backend)
    algorithm = IMPALA(make_model(), STEPS, initial_lr=0.05)
    settings = {"num_actors": 2, "envs_per_actor": 8, "log_every": 1, "seed": 0, **options}
    return ActorLearner(algorithm, make_env, make_model, **settings)


class Enough(Exception):
    """Raised by the test's callback: the learner fails, and must take its actors down."""


@pytest.mark.slow
def test_remote_actors_learn_survive_a_kill_and_stop_with_the_learner(embedded):
    # One cluster start for three properties (each job imports paddle: seconds on 2 cores).
    system = make_system()
    killed: list[int] = []

    def kill_one_then_go_on(learn_steps: int, env_steps: int) -> None:
        if not killed and len(system.contributors) == 2:
            killed.append(system.actor_pids[0])
            os.kill(killed[0], signal.SIGKILL)
        # Go on until the replacement has sent batches too (bounded: fail after 3000 steps).
        if (len(system.contributors) == 3 and env_steps >= 4000) or learn_steps >= 3000:
            raise Enough(f"after {learn_steps} learn steps")

    before = identity_score(system.algorithm.predict, make_env())
    with pytest.raises(Enough):
        system.train(10**9, on_learn=kill_one_then_go_on)
    pids = system.contributors
    wait_for(lambda: gone(pids), 10, f"the actors to exit once the learner failed {alive(pids)}")
    after = identity_score(system.algorithm.predict, make_env())
    assert before < 0.9 and after >= 0.95, (before, after)
    assert killed and system.replaced == 1, "the killed actor was not replaced"
    assert len(pids) == 3 and os.getpid() not in pids, "2 actors and 1 replacement sent batches"
    summary.flush()
    with (embedded / "metrics" / "metrics.csv").open() as handle:
        tags = {row[1] for row in csv.reader(handle)}
    assert set(METRICS) <= tags, set(METRICS) - tags


def test_single_process_baseline_learns_without_a_cluster(backend):
    system = make_system(backend, num_actors=0)
    result = system.train(3000)
    assert result.env_steps >= 3000 and result.utilisation > 0
    assert identity_score(system.algorithm.predict, make_env()) >= 0.95
    assert parl.remote.client._client is None, "no cluster was needed"


def test_schedules_are_called_with_the_env_steps_learned_so_far():
    system = make_system(
        num_actors=0,
        learning_rate=lambda steps: 0.05 / (1 + steps),
        entropy_coeff=lambda steps: -float(steps),
    )
    learn, passed = system.algorithm.learn, []

    def spy(*batch, **options):
        passed.append(batch[5:])
        return learn(*batch, **options)

    system.algorithm.learn = spy
    result = system.train(100)
    per_learn = 8 * (STEPS - 1)  # envs_per_actor * real steps per trajectory
    steps = [per_learn * k for k in range(result.learn_steps)]
    assert passed == [(0.05 / (1 + s), -float(s)) for s in steps]


def test_trajectories_are_whole_rows_with_a_bootstrap_row():
    def short_episodes() -> gym.Env:
        return gym.wrappers.TimeLimit(IdentityEnv(4, episode_length=100), max_episode_steps=3)

    actor = RolloutActor(short_episodes, LinearActorCritic, 2, 4, seed=0)
    first = actor.sample(LinearActorCritic().get_weights(), 7)
    second = actor.sample(None, 8)
    assert first.obs.shape == (8, 4) and first.logits.shape == (8, 4)
    assert first.env_steps == 6 and first.version == 7 and second.version == 7
    last_rows = [3, 7]  # T = 4 rows per env, the last one bootstraps
    assert not first.dones[last_rows].any() and not first.rewards[last_rows].any()
    np.testing.assert_array_equal(second.obs[[0, 4]], first.obs[last_rows])
    both = [first, second]
    assert sum(t.truncated.sum() for t in both) == sum(len(t.final_obs) for t in both) >= 2
    for t in both:
        assert (t.dones >= t.truncated).all()


def test_bad_arguments_are_named():
    alg = IMPALA(LinearActorCritic(), STEPS)
    with pytest.raises(ValueError, match="num_actors must be an integer >= 0"):
        ActorLearner(alg, make_env, LinearActorCritic, num_actors=-1)
    with pytest.raises(TypeError, match="trains an IMPALA"):
        ActorLearner(object(), make_env, LinearActorCritic)  # type: ignore[arg-type]
