"""COMA: the contract suite on the cooperative identity game (paddle and torch), the losses
against numpy, the counterfactual critic it learns, the episode buffer's on-policy batches."""

from __future__ import annotations

import parl
from parl.testing import AlgorithmContract, BadInput, CooperativeIdentityEnv

import numpy as np
import pytest

from parl_algos_marl import COMA, COMAAgent, COMAModel, EpisodeReplayBuffer, RNNAgentModel
from parl_algos_marl.coma import critic_input_dim
from parl_algos_marl.episode_tensors import EpisodeTensors

N_AGENTS, N_ACTIONS, LENGTH, EPISODES = 2, 3, 5, 8


def _random_episodes(rng, count, length=LENGTH):
    """Episodes of the cooperative identity game under random actions, with the actions picked
    at the final observation, in COMA.learn's order."""
    buffer = EpisodeReplayBuffer(
        count, length, N_AGENTS, N_ACTIONS, N_AGENTS * N_ACTIONS, N_ACTIONS
    )
    for _ in range(count):
        targets = rng.integers(0, N_ACTIONS, (length + 1, N_AGENTS))
        obs = np.eye(N_ACTIONS, dtype=np.float32)[targets]
        actions = rng.integers(0, N_ACTIONS, (length + 1, N_AGENTS))
        reward = (actions[:-1] == targets[:-1]).mean(axis=1)
        available = np.ones((length + 1, N_AGENTS, N_ACTIONS))
        buffer.add(obs.reshape(length + 1, -1), obs, available, actions, reward, np.zeros(length))
    return buffer.latest(count)


def _on_policy_episodes(agent, env, buffer, seed):
    """``EPISODES`` episodes acted by ``agent.sample``; their batch."""
    for episode in range(EPISODES):
        obs, _ = env.reset(seed=seed + episode)
        agent.reset_agent()
        states, observations, actions, rewards, terminals = [env.state()], [obs], [], [], []
        done = False
        while not done:
            action = agent.sample(obs)
            obs, reward, terminated, truncated, _ = env.step(action)
            actions.append(action)
            rewards.append(reward)
            terminals.append(terminated)
            observations.append(obs)
            states.append(env.state())
            done = terminated or truncated
        actions.append(agent.sample(obs))  # at the final observation: the critic's bootstrap
        available = np.ones((len(observations), N_AGENTS, N_ACTIONS))
        buffer.add(states, observations, available, actions, rewards, terminals)
    return buffer.latest(EPISODES)


class TestCOMAContract(AlgorithmContract):
    algorithm_name = "COMA"
    backends = ("paddle", "torch")
    algorithm_class = COMA
    backend = "paddle"
    solved_score = 0.9
    train_steps = 60
    short_train_steps = 3

    def make_env(self):
        return CooperativeIdentityEnv(N_AGENTS, N_ACTIONS, episode_length=LENGTH)

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        model = COMAModel(
            N_ACTIONS, N_AGENTS * N_ACTIONS, N_AGENTS, N_ACTIONS, 32, 32, backend=self.backend
        )
        alg = self.algorithm_class(
            model, N_ACTIONS, N_AGENTS, actor_lr=5e-3, critic_lr=5e-3, gamma=0.5, **config
        )
        return COMAAgent(alg, update_target_interval=10, seed=seed)

    def train(self, agent, env, steps, seed):
        """On-policy: ``steps`` learn calls, each on episodes the agent just acted."""
        buffer = EpisodeReplayBuffer(
            EPISODES, LENGTH, N_AGENTS, N_ACTIONS, N_AGENTS * N_ACTIONS, N_ACTIONS
        )
        for step in range(steps):
            agent.learn(*_on_policy_episodes(agent, env, buffer, seed * 100_000 + step * EPISODES))

    def learn_batch(self, agent, rng):
        return agent.learn(*_random_episodes(rng, EPISODES))

    def bad_inputs(self, agent):
        state, actions, reward, terminated, obs, available, filled = _random_episodes(
            np.random.default_rng(1), 4
        )
        too_large = actions.copy()
        too_large[0, 0, 0] = N_ACTIONS
        yield from (
            BadInput(
                "an action index past the last action",
                lambda: agent.learn(state, too_large, reward, terminated, obs, available, filled),
                ValueError,
                r"actions_batch must hold actions in \[0, 3\)",
            ),
            BadInput(
                "available actions of another width",
                lambda: agent.learn(
                    state, actions, reward, terminated, obs, available[..., :2], filled
                ),
                ValueError,
                r"available_actions_batch must be \[4, 6, 2, 3\], got \[4, 6, 2, 2\]",
            ),
            BadInput(
                "a terminated mask that is not 0/1",
                lambda: agent.learn(
                    state, actions, reward, terminated + 0.5, obs, available, filled
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
                "an epsilon outside [0, 1]",
                lambda: agent.alg.learn(
                    state, actions, reward, terminated, obs, available, filled, epsilon=1.5
                ),
                ValueError,
                r"epsilon must be in \[0, 1\], got 1.5",
            ),
            BadInput(
                "a model without a critic",
                lambda: COMA(RNNAgentModel(3, 3, backend=self.backend), 3, 2),
                TypeError,
                "policy",
            ),
            BadInput(
                "one agent's observation to a team agent",
                lambda: agent.predict(np.zeros(3)),
                ValueError,
                r"\[n_agents, obs_dim\]",
            ),
        )


def _lambda_returns(reward, terminated, mask, next_q, gamma, lam):
    """TD(lambda) targets by their definition: ``(1 - lam)·sum_n lam^(n-1)·G^(n)`` with the
    last n-step return, up to the episode's end, taking the remaining weight."""
    size, transitions, n = next_q.shape[0], reward.shape[1], next_q.shape[2]
    out = np.zeros((size, transitions, n))
    for b in range(size):
        real = [t for t in range(transitions) if mask[b, t] > 0]
        end = real[-1] + 1
        for t in real:
            returns, rewards, discount = [], 0.0, 1.0
            for k in range(t, end):
                rewards = rewards + discount * reward[b, k]
                discount *= gamma * (1 - terminated[b, k])
                returns.append(rewards + discount * next_q[b, k])  # Q' of row k + 1
            weights = [(1 - lam) * lam**i for i in range(len(returns) - 1)]
            weights.append(lam ** (len(returns) - 1))
            out[b, t] = sum(w * g for w, g in zip(weights, returns, strict=True))
    return out


def test_losses_match_numpy(backend, rng):
    gamma, lam, epsilon, entropy_coef = 0.9, 0.7, 0.2, 0.01
    model = COMAModel(N_ACTIONS, N_AGENTS * N_ACTIONS, N_AGENTS, N_ACTIONS, 8, 16, backend=backend)
    alg = COMA(model, N_ACTIONS, N_AGENTS, gamma=gamma, td_lambda=lam, entropy_coef=entropy_coef)
    ops = alg.ops
    state, actions, reward, terminated, obs, available, filled = _random_episodes(rng, 3)
    # Episode 1 terminates after 2 of its 5 steps (the rest is junk the masks must hide);
    # episode 2 is truncated after 3 transitions and padded; an action of episode 0 is not
    # available to one agent (the agent did not take it).
    terminated[1, 1] = 1.0
    filled[2, 3:] = 1.0
    blocked = (actions[0, 2, 1] + 1) % N_ACTIONS
    available[0, 2, 1, blocked] = 0.0
    target_weights = alg.target_model.get_weights()
    # A target that differs from the model, so that the targets must come from it.
    alg.target_model.set_weights({k: v * 1.1 for k, v in target_weights.items()})

    # Critic rows [state, obs_a, one_hot(u^-a), one_hot(u_{t-1}), one_hot(a)].
    size, steps = state.shape[:2]
    one_hot = np.eye(N_ACTIONS, dtype=np.float32)[actions]  # [B, T, n, A]
    previous = np.concatenate([np.zeros_like(one_hot[:, :1]), one_hot[:, :-1]], axis=1)
    rows = np.zeros((size, steps, N_AGENTS, critic_input_dim(3, 6, 2, 3)), np.float32)
    for a in range(N_AGENTS):
        others = one_hot.copy()
        others[:, :, a] = 0.0
        ids = np.broadcast_to(np.eye(N_AGENTS, dtype=np.float32)[a], (size, steps, N_AGENTS))
        rows[:, :, a] = np.concatenate(
            [state, obs[:, :, a], others.reshape(size, steps, -1),
             previous.reshape(size, steps, -1), ids], axis=-1,
        )  # fmt: skip

    def run(net, x):
        return ops.to_numpy(net(ops.to_tensor(x, "float32")))

    q = run(alg.model.value, rows)
    q_target = run(alg.target_model.value, rows)
    taken_target = np.take_along_axis(q_target, actions[..., None], -1)[..., 0]
    mask = (1 - filled[:, :-1, 0]).copy()
    mask[1, 2:] = 0.0
    targets = _lambda_returns(
        reward[:, :-1, 0], terminated[:, :-1, 0], mask, taken_target[:, 1:], gamma, lam
    )
    q_taken = np.take_along_axis(q[:, :-1], actions[:, :-1, :, None], -1)[..., 0]
    weights = np.broadcast_to(mask[..., None], q_taken.shape)
    critic_loss = ((q_taken - targets) ** 2 * weights).sum() / weights.sum()

    hidden = np.zeros((size * N_AGENTS, 8), np.float32)
    logits = []
    for t in range(steps - 1):
        out, hidden = alg.model.policy(
            ops.to_tensor(obs[:, t].reshape(size * N_AGENTS, -1)), ops.to_tensor(hidden)
        )
        hidden = ops.to_numpy(hidden)
        logits.append(ops.to_numpy(out).reshape(size, N_AGENTS, -1))
    logits = np.stack(logits, axis=1).astype(np.float64)
    allowed = available[:, :-1] > 0
    pi = np.where(allowed, np.exp(logits - logits.max(-1, keepdims=True)), 0.0)
    pi /= pi.sum(-1, keepdims=True)
    pi = (1 - epsilon) * pi + epsilon * allowed / allowed.sum(-1, keepdims=True)
    baseline = (pi * q[:, :-1]).sum(-1)
    advantage = q_taken - baseline
    log_pi_taken = np.log(np.take_along_axis(pi, actions[:, :-1, :, None], -1)[..., 0])
    entropy = -(pi * np.log(pi + 1e-10)).sum(-1)
    objective = advantage * log_pi_taken + entropy_coef * entropy
    actor_loss = -(objective * weights).sum() / weights.sum()

    stats = alg.learn(state, actions, reward, terminated, obs, available, filled, epsilon=epsilon)
    np.testing.assert_allclose(stats.critic_loss, critic_loss, rtol=1e-4)
    np.testing.assert_allclose(stats.actor_loss, actor_loss, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(stats.entropy, (entropy * weights).sum() / weights.sum(), rtol=1e-4)


def test_counterfactual_critic_and_policy_learn_the_identity_game():
    # Every agent earns the team 1/n for naming its own target: the critic must learn, for
    # each agent, which of its actions is worth more whatever the others do, and the policy
    # follow its counterfactual advantage.
    contract = TestCOMAContract()
    agent, env = contract.make_agent(0), contract.make_env()
    contract.train(agent, env, 60, seed=0)
    rng = np.random.default_rng(5)
    targets = rng.integers(0, N_ACTIONS, (200, N_AGENTS))
    agent.reset_agent()
    assert (agent.predict(np.eye(N_ACTIONS, dtype=np.float32)[targets]) == targets).mean() >= 0.95
    # The critic on fresh states, the other agent's action random: its best action for agent a
    # is a's target.
    obs = np.eye(N_ACTIONS, dtype=np.float32)[targets]
    others = rng.integers(0, N_ACTIONS, 200)
    actions = np.stack([np.zeros(200, np.int64), others], axis=1)[:, None]
    state = obs.reshape(200, 1, -1)
    batch = (state, actions, np.zeros((200, 1)), np.zeros((200, 1)), obs[:, None],
             np.ones((200, 1, N_AGENTS, N_ACTIONS)), np.zeros((200, 1)))  # fmt: skip
    tensors = EpisodeTensors.check(
        agent.alg.ops, agent.alg.device, N_AGENTS, _with_second_row(batch), "test"
    )
    inputs = agent.alg._critic_inputs(tensors)
    q = agent.to_numpy(agent.alg.model.value(inputs))[:, 0, 0]  # agent 0, its every action
    assert (q.argmax(-1) == targets[:, 0]).mean() >= 0.95


def _with_second_row(batch):
    """One-step episodes as two-row batches (the second row: the end)."""
    state, actions, reward, terminated, obs, available, filled = batch
    twice = lambda x: np.concatenate([x, x], axis=1)  # noqa: E731
    filled = np.concatenate([filled, np.ones_like(filled)], axis=1)
    return (*map(twice, (state, actions, reward, terminated, obs, available)), filled)


def test_sample_draws_only_available_actions_and_anneals_epsilon():
    parl.set_seed(0)
    alg = COMA(COMAModel(3, 6, 2, 3), 3, 2)
    agent = COMAAgent(alg, exploration_start=1.0, exploration_end=0.1, exploration_steps=10, seed=0)
    available = np.array([[1, 0, 0], [0, 1, 1]])
    seen = set()
    for _ in range(30):
        actions = agent.sample(np.zeros((2, 3)), available)
        assert actions[0] == 0 and actions[1] in (1, 2)
        seen.add(int(actions[1]))
    assert seen == {1, 2}
    assert agent.epsilon == pytest.approx(0.1)
    assert agent.predict(np.zeros((2, 3)), available)[0] == 0
    with pytest.raises(ValueError, match="leaves some agent no action"):
        agent.sample(np.zeros((2, 3)), np.array([[1, 0, 0], [0, 0, 0]]))


def test_buffer_gives_the_latest_episodes_with_their_final_actions():
    buffer = EpisodeReplayBuffer(3, 2, 1, 1, 1, 2)
    for episode in range(4):
        actions = np.full((3, 1), episode % 2)  # 2 transitions and the final row
        actions[-1] = 1 - episode % 2
        buffer.add(
            np.full((3, 1), episode), np.zeros((3, 1, 1)), np.ones((3, 1, 2)), actions,
            np.zeros(2), np.zeros(2),
        )  # fmt: skip
    latest = buffer.latest(2)
    np.testing.assert_array_equal(latest.state[:, 0, 0], [2, 3])
    np.testing.assert_array_equal(latest.actions[:, :, 0], [[0, 0, 1], [1, 1, 0]])
    with pytest.raises(ValueError, match=r"latest\(4\) asks for more episodes than the 3"):
        buffer.latest(4)


@pytest.mark.torch
def test_device_moves_the_model():
    model = COMAModel(3, 6, 2, 3, backend="torch")
    agent = COMAAgent(COMA(model, 3, 2, device="cpu"), device="cpu")
    assert str(agent.device) == "cpu"
    assert agent.predict(np.eye(3, dtype=np.float32)[[0, 1]]).shape == (2,)
