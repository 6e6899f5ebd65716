"""MAPPO: the contract suite on the cooperative identity game, its objective against numpy."""

from __future__ import annotations

from pathlib import Path

import parl
from parl.env.multiagent_env import ParticleEnv
from parl.testing import AlgorithmContract, BadInput, CooperativeIdentityEnv
from parl.utils import compute_gae

import numpy as np
import paddle
import pytest

from parl_algos_marl import MAPPO, MAPPOAgent, MAPPOModel

N_AGENTS, N_ACTIONS = 2, 3
FIXTURES = Path(__file__).parent / "fixtures"
STATE_DIM = N_AGENTS * N_ACTIONS


def _make(seed, shared=True, backend="paddle", **config):
    parl.set_seed(seed, backend=backend)
    model = MAPPOModel(
        N_ACTIONS, STATE_DIM, N_ACTIONS, N_AGENTS, shared, hidden_sizes=(32,), backend=backend
    )
    return MAPPOAgent(MAPPO(model, **config), N_AGENTS, seed=seed)


class TestMAPPOContract(AlgorithmContract):
    """A contextual bandit per agent: advantage = team reward − centralised value."""

    algorithm_name = "MAPPO"
    backends = ("paddle", "torch")
    backend = "paddle"
    solved_score = 0.9
    train_steps = 150
    short_train_steps = 10
    shared = True

    def make_env(self):
        return CooperativeIdentityEnv(N_AGENTS, N_ACTIONS, episode_length=5)

    def make_agent(self, seed, **config):
        return _make(seed, self.shared, self.backend, initial_lr=1e-2, **config)

    def explore(self, agent, obs):
        return agent.sample(obs, obs.reshape(-1))[1]

    def learn_batch(self, agent, rng):
        targets = rng.integers(0, N_ACTIONS, (32, N_AGENTS))
        obs = np.eye(N_ACTIONS, dtype=np.float32)[targets]
        state = obs.reshape(32, -1)
        values, actions, logp = agent.sample(obs, state)
        reward = np.repeat((actions == targets).mean(1, keepdims=True), N_AGENTS, axis=1)
        flat = lambda x: x.reshape(32 * N_AGENTS, *x.shape[2:])  # noqa: E731
        stats = agent.learn(
            flat(agent.rows(obs, state)),
            flat(actions),
            flat(values),
            flat(reward),
            flat(logp),
            flat(reward - values),
            epochs=1,
            num_minibatches=1,
        )
        return stats.value_loss, stats.action_loss

    def bad_inputs(self, agent):
        yield BadInput(
            "one agent's observation where the team's is expected",
            lambda: agent.predict(np.zeros(N_ACTIONS)),
            ValueError,
            r"\[n_agents, obs_dim\] or \[B, n_agents, obs_dim\] with n_agents=2",
        )
        rows = agent.rows(np.zeros((4, N_AGENTS, N_ACTIONS)), np.zeros((4, STATE_DIM)))
        rows = rows.reshape(8, -1)
        yield BadInput(
            "advantages for fewer agent-steps than rows",
            lambda: agent.learn(
                rows,
                np.zeros(8, np.int64),
                np.zeros(8),
                np.zeros(8),
                np.zeros(8),
                np.zeros(6),
                1,
                1,
            ),
            ValueError,
            r"batch_adv must have shape \[8\]",
        )


class TestMAPPOPerAgentContract(TestMAPPOContract):
    shared = False


def test_clipped_objective_matches_numpy(rng):
    agent = _make(
        0,
        clip_param=0.2,
        norm_adv=False,
        value_loss_coef=0.5,
        entropy_coef=0.01,
        max_grad_norm=None,
    )
    obs = np.eye(N_ACTIONS, dtype=np.float32)[rng.integers(0, N_ACTIONS, (3, N_AGENTS))]
    rows = agent.rows(obs, obs.reshape(3, -1)).reshape(6, -1)
    actions = rng.integers(0, N_ACTIONS, 6)
    old_logp = rng.normal(-1.1, 0.4, 6).astype(np.float32)
    old_values = rng.normal(size=6).astype(np.float32)
    returns = rng.normal(size=6).astype(np.float32)
    adv = rng.normal(size=6).astype(np.float32)
    model = agent.alg.model
    logits = model.policy(parl.core.paddle.batch.to_tensor(rows, "float32")).numpy()
    values = model.value(parl.core.paddle.batch.to_tensor(rows, "float32")).numpy()
    log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ratio = np.exp(log_probs[np.arange(6), actions] - old_logp)
    action_loss = -np.minimum(ratio * adv, np.clip(ratio, 0.8, 1.2) * adv).mean()
    clipped = old_values + np.clip(values - old_values, -0.2, 0.2)
    value_loss = 0.5 * np.maximum((values - returns) ** 2, (clipped - returns) ** 2).mean()
    entropy = -(np.exp(log_probs) * log_probs).sum(1).mean()
    stats = agent.learn(rows, actions, old_values, returns, old_logp, adv, 1, 1)
    np.testing.assert_allclose(
        [stats.action_loss, stats.value_loss, stats.entropy],
        [action_loss, value_loss, entropy],
        rtol=1e-5,
    )


def test_per_agent_policies_learn_only_from_their_own_rows(rng):
    agent = _make(0, shared=False)
    before = agent.get_weights()
    obs = np.eye(N_ACTIONS, dtype=np.float32)[rng.integers(0, N_ACTIONS, (4, N_AGENTS))]
    rows = agent.rows(obs, obs.reshape(4, -1))[:, 1]  # agent 1's rows only
    agent.learn(
        rows, np.zeros(4, np.int64), np.zeros(4), np.ones(4), np.full(4, -1.1), np.ones(4), 1, 1
    )
    after = agent.get_weights()
    assert all(np.array_equal(before[k], after[k]) for k in before if k.startswith("actors.0"))
    assert any(not np.array_equal(before[k], after[k]) for k in before if k.startswith("actors.1"))


def test_a_rollout_on_simple_spread_with_gae():
    env = ParticleEnv("simple_spread", max_cycles=8)
    n, obs_dim = env.n, env.obs_shape_n[0]
    parl.set_seed(0)
    model = MAPPOModel(obs_dim, env.state_space.shape[0], env.act_shape_n[0], n)
    agent = MAPPOAgent(MAPPO(model), n, seed=0)
    obs, _ = env.reset(seed=0)
    rows, actions, values, logps, rewards, dones = [], [], [], [], [], []
    done = np.zeros(n)
    for _ in range(8):
        state = env.state()
        value, action, logp = agent.sample(np.stack(obs), state)
        rows.append(agent.rows(np.stack(obs), state))
        obs, reward, terminated, truncated, _ = env.step(list(action))
        actions.append(action), values.append(value), logps.append(logp), dones.append(done)
        rewards.append(np.asarray(reward, np.float32))
        done = np.asarray(terminated) | np.asarray(truncated)
    assert done.all(), "the episode must end after max_cycles"
    adv, returns = compute_gae(
        np.stack(rewards),
        np.stack(values),
        np.stack(dones),
        np.zeros(n),
        done.astype(np.float32),
        0.99,
        0.95,
    )
    flat = lambda x: np.stack(x).reshape(8 * n, *np.shape(x[0])[1:])  # noqa: E731
    stats = agent.learn(
        flat(rows),
        flat(actions),
        flat(values),
        returns.reshape(-1),
        flat(logps),
        adv.reshape(-1),
        epochs=2,
        num_minibatches=2,
    )
    assert np.isfinite([stats.value_loss, stats.action_loss]).all() and stats.epochs == 2


def test_bad_agent_construction():
    with pytest.raises(TypeError, match="MAPPOAgent needs a MAPPO algorithm"):
        MAPPOAgent(object(), 2)


def test_loads_a_checkpoint_and_weights_of_the_previous_version():
    # Written by MAPPO before its model and agent were written once for both frameworks.
    expected = np.load(FIXTURES / "mappo_paddle_expected.npz")
    probe = expected["probe"]
    for load, suffix in (("load_checkpoint", "ckpt"), ("restore", "weights")):
        agent = TestMAPPOContract().make_agent(0)
        getattr(agent, load)(FIXTURES / f"mappo_paddle.{suffix}")
        values = agent.value(probe, probe.reshape(len(probe), -1))
        np.testing.assert_allclose(values, expected["expected"], rtol=1e-6)


@pytest.mark.parametrize("centralised", [True, False])
def test_ippo_critic_sees_only_the_agents_own_observation(centralised: bool) -> None:
    """Without a centralised critic (IPPO) the value ignores the global state; with it, not."""
    model = MAPPOModel(
        N_ACTIONS, STATE_DIM, N_ACTIONS, N_AGENTS, centralised_critic=centralised, backend="paddle"
    )
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(4, N_ACTIONS + N_AGENTS + STATE_DIM)).astype(np.float32)
    other_state = rows.copy()
    other_state[:, N_ACTIONS + N_AGENTS :] += 1.0
    other_obs = rows.copy()
    other_obs[:, :N_ACTIONS] += 1.0
    value = lambda x: model.value(paddle.to_tensor(x)).numpy()  # noqa: E731
    assert np.allclose(value(rows), value(other_state)) != centralised
    assert np.allclose(value(rows), value(other_obs)) == centralised


@pytest.mark.parametrize("backend", ["paddle", pytest.param("torch", marks=pytest.mark.torch)])
@pytest.mark.parametrize("shared", [True, False])
def test_agents_with_fewer_actions_never_take_the_ones_they_lack(backend: str, shared: bool):
    """simple_speaker_listener's speaker says one of 3 words, the listener has 5 moves."""
    parl.set_seed(0, backend=backend)
    model = MAPPOModel(11, 4, [3, 5], 2, shared, hidden_sizes=(8,), backend=backend)
    agent = MAPPOAgent(MAPPO(model), 2, seed=0)
    obs = np.random.default_rng(0).normal(size=(256, 2, 11)).astype(np.float32)
    _, actions, log_probs = agent.sample(obs, np.zeros((256, 4), np.float32))
    assert actions[:, 0].max() <= 2 and actions[:, 1].max() == 4 and np.isfinite(log_probs).all()
    logits = agent.to_numpy(model.policy(agent.to_tensor(agent.rows(obs))))
    speaker = logits[:, 0] if logits.ndim == 3 else logits.reshape(256, 2, 5)[:, 0]
    assert (speaker[:, 3:] < -1e8).all() and (speaker[:, :3] > -1e3).all()
    with pytest.raises(ValueError, match=r"one count for all agents or one per agent \(2\)"):
        MAPPOModel(11, 4, [3, 5, 5], 2, backend=backend)
