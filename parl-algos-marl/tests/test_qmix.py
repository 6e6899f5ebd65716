"""QMIX: the contract suite on the cooperative identity game (paddle and torch), mixing and loss
against numpy, files of the previous version."""

from __future__ import annotations

from pathlib import Path

import parl
from parl.testing import AlgorithmContract, BadInput, CooperativeIdentityEnv

import numpy as np
import paddle
import pytest

from parl_algos_marl import QMIX, EpisodeReplayBuffer, QMIXAgent, QMixerModel, RNNAgentModel

N_AGENTS, N_ACTIONS, LENGTH = 2, 3, 5
FIXTURES = Path(__file__).parent / "fixtures"


def _random_episodes(rng, count, length=LENGTH):
    """Episodes of the cooperative identity game under random actions, in QMIX.learn's order."""
    buffer = EpisodeReplayBuffer(
        count, length, N_AGENTS, N_ACTIONS, N_AGENTS * N_ACTIONS, N_ACTIONS, seed=0
    )
    for _ in range(count):
        targets = rng.integers(0, N_ACTIONS, (length + 1, N_AGENTS))
        obs = np.eye(N_ACTIONS, dtype=np.float32)[targets]
        actions = rng.integers(0, N_ACTIONS, (length, N_AGENTS))
        reward = (actions == targets[:-1]).mean(axis=1)
        terminated = np.arange(length) == length - 1
        available = np.ones((length + 1, N_AGENTS, N_ACTIONS))
        buffer.add(obs.reshape(length + 1, -1), obs, available, actions, reward, terminated)
    return buffer.sample_batch(count)  # a seeded draw: the batch depends on rng alone


class TestQMIXContract(AlgorithmContract):
    algorithm_name = "QMIX"
    backends = ("paddle", "torch")
    algorithm_class = QMIX
    backend = "paddle"
    solved_score = 0.9
    train_steps = 150
    short_train_steps = 10

    def make_env(self):
        return CooperativeIdentityEnv(N_AGENTS, N_ACTIONS, episode_length=LENGTH)

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        alg = self.algorithm_class(
            RNNAgentModel(N_ACTIONS, N_ACTIONS, hidden_dim=32, backend=self.backend),
            QMixerModel(
                N_AGENTS, N_AGENTS * N_ACTIONS, embed_dim=16, hypernet_dim=32, backend=self.backend
            ),
            gamma=0.5,
            lr=5e-3,
            **config,
        )
        return QMIXAgent(alg, N_ACTIONS, update_target_interval=10, seed=seed)

    def learn_batch(self, agent, rng):
        return agent.learn(*_random_episodes(rng, 16))

    def bad_inputs(self, agent):
        good = _random_episodes(np.random.default_rng(1), 4)
        state, actions, reward, terminated, obs, available, filled = good
        yield from (
            BadInput(
                "a filled mask of another length",
                lambda: agent.learn(
                    state, actions, reward, terminated, obs, available, filled[:, :-1]
                ),
                ValueError,
                r"filled_batch must be \[4, 6, 1\] to match state_batch, got \[4, 5, 1\]",
            ),
            BadInput(
                "a terminated mask that is not 0/1",
                lambda: agent.learn(
                    state, actions, reward, terminated * 0.5, obs, available, filled
                ),
                ValueError,
                "terminated_batch must hold 0 or 1 only",
            ),
            BadInput(
                "every step marked as padding",
                lambda: agent.learn(
                    state, actions, reward, terminated, obs, available, np.ones_like(filled)
                ),
                ValueError,
                "leave no transition",
            ),
            BadInput(
                "observations of three agents for a two-agent mixer",
                lambda: agent.learn(
                    state,
                    actions,
                    reward,
                    terminated,
                    np.concatenate([obs, obs[:, :, :1]], axis=2),
                    available,
                    filled,
                ),
                ValueError,
                r"for 2 agents \(qmixer_model.n_agents\)",
            ),
            BadInput(
                "a mixer without n_agents",
                lambda: QMIX(
                    RNNAgentModel(3, 3, backend=self.backend),
                    RNNAgentModel(3, 3, backend=self.backend),
                ),
                ValueError,
                "qmixer_model.n_agents",
            ),
            BadInput(
                "one agent's observation to a team agent",
                lambda: agent.predict(np.zeros(3)),
                ValueError,
                r"\[n_agents, obs_dim\]",
            ),
        )


def _mixer_numpy(w, qs, states):
    relu = lambda x: np.maximum(x, 0)  # noqa: E731
    lin = lambda x, name: x @ w[f"{name}.weight"] + w[f"{name}.bias"]  # noqa: E731
    w1 = np.abs(lin(relu(lin(states, "hyper_w1.0")), "hyper_w1.2")).reshape(len(qs), -1, 4)
    b1 = lin(states, "hyper_b1")
    pre = np.einsum("bn,bne->be", qs, w1) + b1
    hidden = np.where(pre > 0, pre, np.expm1(np.minimum(pre, 0)))  # elu
    w2 = np.abs(lin(relu(lin(states, "hyper_w2.0")), "hyper_w2.2"))
    v = lin(relu(lin(states, "hyper_v.0")), "hyper_v.2")
    return (hidden * w2).sum(axis=1, keepdims=True) + v


def test_mixing_matches_numpy_and_is_monotonic(rng):
    mixer = QMixerModel(3, 5, embed_dim=4, hypernet_dim=8)
    qs = rng.normal(size=(2, 4, 3)).astype(np.float32)
    states = rng.normal(size=(2, 4, 5)).astype(np.float32)
    q_tensor = paddle.to_tensor(qs, stop_gradient=False)
    q_tot = mixer(q_tensor, paddle.to_tensor(states))
    expected = _mixer_numpy(mixer.get_weights(), qs.reshape(8, 3), states.reshape(8, 5))
    np.testing.assert_allclose(q_tot.numpy().reshape(8, 1), expected, rtol=1e-5, atol=1e-6)
    q_tot.sum().backward()
    assert (q_tensor.grad.numpy() >= 0).all(), "Q_tot decreases in some agent's Q"


def _lambda_returns_numpy(reward, terminated, mask, next_tot, gamma, lam):
    """TD(λ) returns in the forward view, episode by episode: ``G = (1 - λ)·Σ_n λ^(n-1)·G(n)``
    over the n-step returns that end inside the episode, the rest of the weight on the longest
    one (which bootstraps at a truncation and does not at a termination)."""
    out = np.zeros_like(next_tot)
    for e in range(len(reward)):
        steps = int(mask[e].sum())  # real transitions come first
        for t in range(steps):
            longest = steps - t
            n_step = []
            for n in range(1, longest + 1):
                ret = sum(gamma**k * reward[e, t + k, 0] for k in range(n))
                ends = terminated[e, t + n - 1, 0] == 1
                n_step.append(ret + (0.0 if ends else gamma**n * next_tot[e, t + n - 1, 0]))
            weights = [(1 - lam) * lam ** (n - 1) for n in range(1, longest)] + [
                lam ** (longest - 1)
            ]
            out[e, t, 0] = np.dot(weights, n_step)
    return out


@pytest.mark.parametrize("td_lambda", [0.0, 0.6, 1.0])
def test_masked_td_loss_matches_numpy(rng, backend, td_lambda):
    gamma = 0.9
    alg = QMIX(
        RNNAgentModel(3, 3, 8, backend=backend),
        QMixerModel(2, 6, 4, 8, backend=backend),
        gamma=gamma,
        double_q=True,
        td_lambda=td_lambda,
    )
    state, actions, reward, terminated, obs, available, filled = _random_episodes(rng, 3)
    # Episode 0 is truncated at the batch's end (its last step bootstraps); episode 1
    # terminates after 2 of its 5 steps (the rest is junk a mask must hide); episode 2 is 3
    # transitions long and padded, truncated too; one action of episode 0 is unavailable.
    terminated[0, 4] = 0.0
    terminated[1, 1] = 1.0
    filled[2, 3:] = 1.0
    available[0, 2, 1, 0] = 0.0
    other = QMixerModel(2, 6, 4, 8, backend=backend)  # targets that differ from the mixer
    alg.target_qmixer_model.set_weights(other.get_weights())
    ops = alg.ops

    def unroll(model):
        hidden = np.zeros((6, 8), np.float32)
        out = []
        for t in range(obs.shape[1]):
            q, h = model(ops.to_tensor(obs[:, t].reshape(6, 3)), ops.to_tensor(hidden))
            hidden = ops.to_numpy(h)
            out.append(ops.to_numpy(q).reshape(3, 2, 3))
        return np.stack(out, axis=1)

    with ops.no_grad():
        q, q_target = unroll(alg.model), unroll(alg.target_model)
    best = np.where(available[:, 1:] > 0, q[:, 1:], -np.inf).argmax(-1)
    next_q = np.take_along_axis(q_target[:, 1:], best[..., None], -1)[..., 0]
    chosen = np.take_along_axis(q[:, :-1], actions[:, :-1, :, None], -1)[..., 0]

    def mix(model, qs, states):
        with ops.no_grad():
            return ops.to_numpy(model(ops.to_tensor(qs), ops.to_tensor(states)))

    next_tot = mix(alg.target_qmixer_model, next_q.astype(np.float32), state[:, 1:])
    mask = np.ones_like(next_tot)
    mask[1, 2:] = 0.0  # after the termination (the terminating step itself counts)
    mask[2, 3:] = 0.0  # padding
    target = _lambda_returns_numpy(
        reward[:, :-1], terminated[:, :-1], mask, next_tot, gamma, td_lambda
    )
    if td_lambda == 0.0:  # the reference's λ = 0 is the one-step target
        one_step = reward[:, :-1] + gamma * (1 - terminated[:, :-1]) * next_tot
        np.testing.assert_allclose(target * mask, one_step * mask, rtol=1e-6)
    td = target - mix(alg.qmixer_model, chosen.astype(np.float32), state[:, :-1])
    loss, mean_td = alg.learn(state, actions, reward, terminated, obs, available, filled)
    np.testing.assert_allclose(ops.to_numpy(loss), (td**2 * mask).sum() / mask.sum(), rtol=1e-4)
    np.testing.assert_allclose(
        ops.to_numpy(mean_td), (td * mask).sum() / mask.sum(), rtol=1e-4, atol=1e-6
    )


@pytest.mark.parametrize("td_lambda", [-0.1, 1.5])
def test_td_lambda_outside_zero_one_is_a_config_error(td_lambda):
    with pytest.raises(ValueError, match=r"td_lambda\n  Input should be (greater|less) than"):
        QMIX(RNNAgentModel(3, 3, 8), QMixerModel(2, 6, 4, 8), td_lambda=td_lambda)


@pytest.mark.parametrize("backend", ["paddle", pytest.param("torch", marks=pytest.mark.torch)])
def test_soft_target_updates_move_the_targets_tau_of_the_way(backend):
    # EPyMARL's target_update_interval_or_tau < 1: after every learn step each target weight
    # moves tau of the way to the online one; tau = 1 (PARL's) copies every interval.
    batch = _random_episodes(np.random.default_rng(0), 4)
    alg = QMIX(
        RNNAgentModel(N_ACTIONS, N_ACTIONS, 8, backend=backend),
        QMixerModel(N_AGENTS, N_AGENTS * N_ACTIONS, 4, 8, backend=backend),
        optimizer="adam",
        lr=1e-2,
    )
    agent = QMIXAgent(alg, N_ACTIONS, update_target_interval=1, target_tau=0.25)
    pairs = ((alg.model, alg.target_model), (alg.qmixer_model, alg.target_qmixer_model))
    for _ in range(2):
        before = [target.get_weights() for _, target in pairs]
        agent.learn(*batch)
        for (online, target), old in zip(pairs, before, strict=True):
            now, new = target.get_weights(), online.get_weights()
            for name, value in old.items():
                assert not np.allclose(new[name], value)  # the step moved the network
                np.testing.assert_allclose(
                    now[name], 0.75 * value + 0.25 * new[name], rtol=1e-5, atol=1e-7
                )
    agent = QMIXAgent(alg, N_ACTIONS, update_target_interval=2)
    for step in (1, 2):
        agent.learn(*batch)
        copied = [
            all(
                np.array_equal(o, t)
                for o, t in zip(
                    online.get_weights().values(), target.get_weights().values(), strict=True
                )
            )
            for online, target in pairs
        ]
        assert copied == [step == 2] * 2
    with pytest.raises(ValueError, match=r"target_tau must be in \(0, 1\]"):
        QMIXAgent(alg, N_ACTIONS, target_tau=0.0)


def test_sample_explores_only_available_actions_and_anneals():
    parl.set_seed(0)
    alg = QMIX(RNNAgentModel(3, 3), QMixerModel(2, 6))
    agent = QMIXAgent(alg, 3, exploration_steps=10, exploration_end=0.1, seed=0)
    available = np.array([[1, 0, 0], [0, 1, 1]])
    for _ in range(20):
        actions = agent.sample(np.zeros((2, 3)), available)
        assert actions[0] == 0 and actions[1] in (1, 2)
    assert agent.epsilon == pytest.approx(0.1)


def test_buffer_refuses_an_episode_of_the_wrong_shape():
    buffer = EpisodeReplayBuffer(4, 3, 2, 3, 6, 3)
    with pytest.raises(ValueError, match=r"obs must have shape \(3, 2, 3\) for an episode of 2"):
        buffer.add(
            np.zeros((3, 6)),
            np.zeros((2, 2, 3)),
            np.ones((3, 2, 3)),
            np.zeros((2, 2), np.int64),
            np.zeros(2),
            np.zeros(2),
        )
    with pytest.raises(ValueError, match="1 to 3 transitions, got 4"):
        buffer.add(
            np.zeros((5, 6)),
            np.zeros((5, 2, 3)),
            np.ones((5, 2, 3)),
            np.zeros((4, 2), np.int64),
            np.zeros(4),
            np.zeros(4),
        )
    assert len(buffer) == 0


def _offset_episodes(seed, offset, effect=0.1, count=200, length=5, n_actions=5):
    """The identity game with a large common reward offset and a small per-action effect (as
    the particle envs' negative distances): episodes under random actions."""
    rng = np.random.default_rng(seed)
    buffer = EpisodeReplayBuffer(
        count, length, N_AGENTS, n_actions, N_AGENTS * n_actions, n_actions, seed=seed
    )
    for _ in range(count):
        targets = rng.integers(0, n_actions, (length + 1, N_AGENTS))
        obs = np.eye(n_actions, dtype=np.float32)[targets]
        actions = rng.integers(0, n_actions, (length, N_AGENTS))
        reward = offset + effect * (actions == targets[:-1]).mean(axis=1)
        available = np.ones((length + 1, N_AGENTS, n_actions))
        buffer.add(obs.reshape(length + 1, -1), obs, available, actions, reward, np.zeros(length))
    return buffer


def _greedy_accuracy(agent, seed, n_actions=5):
    targets = np.random.default_rng(seed).integers(0, n_actions, (500, N_AGENTS))
    agent.reset_agent()
    return float((agent.predict(np.eye(n_actions, dtype=np.float32)[targets]) == targets).mean())


@pytest.mark.parametrize("standardise", [False, True])
def test_standardised_rewards_keep_small_action_effects_under_a_large_offset(standardise):
    # Time limits bootstrap (never terminated): Q_tot tends to -5 / (1 - 0.99) = -500, and
    # the 0.1 difference between actions is lost in fitting that, unless rewards are
    # standardised. This is why QMIX did not learn simple_spread (-5 per step) in 40k steps.
    buffer = _offset_episodes(0, offset=-5.0)
    parl.set_seed(0)
    alg = QMIX(RNNAgentModel(5, 5, 32), QMixerModel(N_AGENTS, 2 * 5, 16, 32), lr=5e-4)
    agent = QMIXAgent(alg, 5, update_target_interval=20, seed=0, standardise_rewards=standardise)
    for _ in range(200):  # from torch's initialisation it finds them after ~150 (chance at 100)
        agent.learn(*buffer.sample_batch(16))
    accuracy = _greedy_accuracy(agent, 1)
    if standardise:
        assert accuracy >= 0.95, accuracy
        mean, _, count = agent.reward_moments
        assert count == 200 * 16 * 5 and mean == pytest.approx(-5 + 0.1 / 5, abs=0.01)
    else:
        assert accuracy < 0.6, f"the offset no longer hides the actions ({accuracy}): see QMIXAgent"


def test_reward_moments_survive_a_checkpoint_and_a_rejected_batch(tmp_path):
    agent = TestQMIXContract().make_agent(0)
    agent.standardise_rewards = True
    batch = _random_episodes(np.random.default_rng(0), 4)
    agent.learn(*batch)
    moments = agent.reward_moments.copy()
    assert moments[2] == 4 * LENGTH
    state, actions, reward, terminated, obs, available, filled = batch
    with pytest.raises(ValueError, match="terminated_batch must hold 0 or 1"):
        agent.learn(state, actions, reward, terminated * 0.5, obs, available, filled)
    np.testing.assert_array_equal(agent.reward_moments, moments)
    agent.save_checkpoint(tmp_path / "ckpt")
    other = TestQMIXContract().make_agent(1)
    other.load_checkpoint(tmp_path / "ckpt")
    np.testing.assert_array_equal(other.reward_moments, moments)


@pytest.mark.torch
def test_device_moves_the_models_and_the_frameworks_must_agree():
    agent_model, mixer = RNNAgentModel(3, 3, backend="torch"), QMixerModel(2, 6, backend="torch")
    agent = QMIXAgent(QMIX(agent_model, mixer, device="cpu"), 3, device="cpu")
    assert str(agent.device) == "cpu"
    assert agent.predict(np.eye(3, dtype=np.float32)[[0, 1]]).shape == (2,)
    with pytest.raises(TypeError, match="both models on one framework"):
        QMIX(RNNAgentModel(3, 3, backend="torch"), QMixerModel(2, 6, backend="paddle"))
    with pytest.raises(ValueError, match="paddle backend takes no device argument"):
        QMIX(
            RNNAgentModel(3, 3, backend="paddle"),
            QMixerModel(2, 6, backend="paddle"),
            device="cuda",
        )


def test_loads_a_checkpoint_and_weights_of_the_previous_version():
    # Written by the paddle-only QMIX before it was written once for both frameworks.
    expected = np.load(FIXTURES / "qmix_paddle_expected.npz")
    for load, suffix in (("load_checkpoint", "ckpt"), ("restore", "weights")):
        agent = TestQMIXContract().make_agent(0)
        getattr(agent, load)(FIXTURES / f"qmix_paddle.{suffix}")
        agent.reset_agent()
        np.testing.assert_allclose(
            agent._local_q(expected["probe"]), expected["expected"], rtol=1e-6
        )


@pytest.mark.parametrize("backend", ["paddle", pytest.param("torch", marks=pytest.mark.torch)])
def test_networks_start_from_torchs_default_initialisation_on_both_frameworks(backend):
    # Paddle's own Linear start (Xavier-uniform weights, zero biases) left QMIX below a random
    # policy on simple_spread (-338 after 40k steps) where the same update on torch reached
    # -109; every Linear now draws weights and biases from U(±1/√fan_in) on both, the GRU
    # from U(±1/√hidden) (both frameworks' GRUCell default).
    parl.set_seed(0, backend=backend)
    hidden = 64
    for model in (
        RNNAgentModel(21, 5, hidden, backend=backend),
        QMixerModel(3, 54, backend=backend),
    ):
        params = {
            name: np.asarray(p.detach().cpu() if backend == "torch" else p.numpy())
            for name, p in model.named_parameters()
        }
        for name, values in params.items():
            layer = name.rsplit(".", 1)[0]
            if layer == "rnn":
                bound = 1 / np.sqrt(hidden)
            else:
                weight = params[f"{layer}.weight"]
                bound = 1 / np.sqrt(weight.shape[0] if backend == "paddle" else weight.shape[1])
            assert np.abs(values).max() <= bound * (1 + 1e-6), (name, bound)
            if values.size >= 32:  # spread over the whole range, biases too
                assert np.abs(values).max() > 0.8 * bound, (name, bound)
                assert values.std() == pytest.approx(bound / np.sqrt(3), rel=0.25), name


@pytest.mark.parametrize("backend", ["paddle", pytest.param("torch", marks=pytest.mark.torch)])
def test_adam_takes_steps_of_the_learning_rate_where_rmsprop_does_not(backend):
    # EPyMARL's QMIX optimizer. Adam's first step moves each weight by lr·g/(|g| + eps), about
    # lr wherever the gradient is not tiny; RMSProp's, by lr·g/sqrt(0.01·g² + 1e-5), depends on g.
    batch = _random_episodes(np.random.default_rng(0), 4)
    moves = {}
    for optimizer in ("adam", "rmsprop"):
        parl.set_seed(0, backend=backend)
        alg = QMIX(
            RNNAgentModel(N_ACTIONS, N_ACTIONS, 8, backend=backend),
            QMixerModel(N_AGENTS, N_AGENTS * N_ACTIONS, 4, 8, backend=backend),
            lr=1e-3,
            clip_grad_norm=10.0,
            optimizer=optimizer,
        )
        before = {name: array.copy() for name, array in alg.get_weights().items()}
        alg.learn(*batch)
        moves[optimizer] = np.concatenate(
            [np.abs(alg.get_weights()[name] - value).ravel() for name, value in before.items()]
        )
    assert alg.config.optimizer == "rmsprop"
    adam, rmsprop = (np.median(moved[moved > 1e-6]) for moved in moves.values())
    assert adam == pytest.approx(1e-3, rel=0.05)
    assert rmsprop != pytest.approx(1e-3, rel=0.05)


@pytest.mark.parametrize("backend", ["paddle", pytest.param("torch", marks=pytest.mark.torch)])
def test_learn_takes_a_learning_rate_for_annealing(backend):
    # The example's --anneal-lr: each learn step may set the rate; Adam's first step moves
    # each weight by about that rate, so the step shows which rate it took.
    batch = _random_episodes(np.random.default_rng(0), 4)
    alg = QMIX(
        RNNAgentModel(N_ACTIONS, N_ACTIONS, 8, backend=backend),
        QMixerModel(N_AGENTS, N_AGENTS * N_ACTIONS, 4, 8, backend=backend),
        lr=1e-3,
        optimizer="adam",
    )
    agent = QMIXAgent(alg, N_ACTIONS)
    before = alg.get_weights()
    agent.learn(*batch, lr=2e-3)
    moved = np.concatenate(
        [np.abs(alg.get_weights()[name] - value).ravel() for name, value in before.items()]
    )
    assert np.median(moved[moved > 1e-6]) == pytest.approx(2e-3, rel=0.05)
    state, actions, reward, terminated, obs, available, filled = batch
    with pytest.raises(ValueError, match="leave no transition"):
        agent.learn(
            state, actions, reward, terminated, obs, available, np.ones_like(filled), lr=1e-4
        )
    assert alg.get_lr() == pytest.approx(2e-3)  # the refused batch left the rate
    with pytest.raises(ValueError, match="lr must be a non-negative number, got -0.1"):
        agent.learn(*batch, lr=-0.1)
    assert alg.get_lr() == pytest.approx(2e-3)
