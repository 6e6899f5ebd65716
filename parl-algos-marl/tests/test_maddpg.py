"""MADDPG: the contract suite on paddle and torch, its critic target and losses against numpy,
real MPE, bad input, files of the previous version."""

from __future__ import annotations

from pathlib import Path

import parl
from parl.env.multiagent_env import ParticleEnv
from parl.testing import AlgorithmContract, BadInput
from parl.utils import ReplayMemory

import gymnasium as gym
import numpy as np
import pytest

from parl_algos_marl import MADDPG, MADDPGAgent, MAModel

BOX = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
FIXTURES = Path(__file__).parent / "fixtures"


def paddle_layout(model) -> dict[str, np.ndarray]:
    """The model's weights with every Linear weight ``[in, out]`` (paddle's layout)."""
    if model.backend_name == "paddle":
        return model.get_weights()
    from parl.core.torch.interop import to_paddle_weights

    return to_paddle_weights(model)


def _agents(obs_dims, act_spaces, seed=0, backend="paddle", **options):
    """One MADDPGAgent per agent, learning on every call from 8 transitions on."""
    parl.set_seed(seed, backend=backend)
    act_dims = [s.n if isinstance(s, gym.spaces.Discrete) else s.shape[0] for s in act_spaces]
    critic_in = sum(obs_dims) + sum(act_dims)
    return [
        MADDPGAgent(
            MADDPG(
                MAModel(o, a, critic_in, isinstance(s, gym.spaces.Box), (16,), backend=backend),
                i,
                act_spaces,
                **options,
            ),
            obs_dims,
            act_dims,
            batch_size=8,
            min_memory_size=8,
            learn_every=1,
            seed=seed + i,
        )
        for i, (o, a, s) in enumerate(zip(obs_dims, act_dims, act_spaces, strict=True))
    ]


class TestMADDPGContract(AlgorithmContract):
    """A single MADDPG agent with continuous actions on the identity task (IdentityEnvBox)."""

    algorithm_name = "MADDPG"
    backends = ("paddle", "torch")
    action_kind = "continuous"
    solved_score = -0.03
    train_steps = 300
    short_train_steps = 20

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        model = MAModel(1, 1, 2, True, (32, 32), backend=self.backend)
        alg = self.algorithm_class(
            model, 0, [BOX], gamma=0.5, actor_lr=3e-3, critic_lr=3e-3, **config
        )
        return MADDPGAgent(
            alg, [1], [1], batch_size=64, min_memory_size=64, learn_every=1, seed=seed
        )

    def learn_batch(self, agent, rng):
        # A memory of this batch alone: a training checkpoint holds models, optimizers and
        # counters, not the replay memory (ReplayMemory.save keeps that, as in PARL).
        agent.rpm = ReplayMemory(64, 1, 1, seed=int(rng.integers(2**31)))
        obs = rng.uniform(-1, 1, (64, 1)).astype(np.float32)
        action = rng.uniform(-1, 1, (64, 1)).astype(np.float32)
        reward = -((action - obs) ** 2)[:, 0]
        for row in range(64):
            agent.add_experience(obs[row], action[row], reward[row], obs[row], True)
        return agent.learn([agent])

    def bad_inputs(self, agent):
        obs, act = np.zeros((3, 1), np.float32), np.zeros((3, 1), np.float32)
        yield from (
            BadInput(
                "a batch for two agents where there is one",
                lambda: agent.alg.learn([obs, obs], [act, act], np.zeros(3)),
                ValueError,
                r"obs_n must hold one batch per agent \(1 agents\), got 2",
            ),
            BadInput(
                "batches of different sizes",
                lambda: agent.alg.learn([obs], [act[:2]], np.zeros(3)),
                ValueError,
                "the same size",
            ),
            BadInput(
                "a target of another batch",
                lambda: agent.alg.learn([obs], [act], np.zeros(2)),
                ValueError,
                r"target_q must have shape \[3\]",
            ),
            BadInput(
                "an agent index out of range",
                lambda: MADDPG(MAModel(1, 1, 2, True, backend=self.backend), 1, [BOX]),
                ValueError,
                r"agent_index must be an int in \[0, 1\) for 1 action spaces, got 1",
            ),
            BadInput(
                "a list of agents without this one",
                lambda: agent.learn([self.make_agent(1)]),
                ValueError,
                "with this one at index 0",
            ),
        )


def _mlp_numpy(weights, prefix, x):
    """The forward pass of models.mlp from its weights (ReLU between Linear layers)."""
    layers = sorted({k.split(".")[1] for k in weights if k.startswith(prefix)}, key=int)
    for position, layer in enumerate(layers):
        x = x @ weights[f"{prefix}.{layer}.weight"] + weights[f"{prefix}.{layer}.bias"]
        if position < len(layers) - 1:
            x = np.maximum(x, 0.0)
    return x


def test_critic_target_and_critic_loss_match_numpy(rng, backend):
    spaces = [gym.spaces.Discrete(3), BOX]
    agents = _agents([2, 4], spaces, backend=backend, gamma=0.9)
    batch = 5
    obs_n = [rng.normal(size=(batch, d)).astype(np.float32) for d in (2, 4)]
    act_n = [
        np.eye(3, dtype=np.float32)[rng.integers(0, 3, batch)],
        rng.uniform(-1, 1, (batch, 1)).astype(np.float32),
    ]
    reward = rng.normal(size=batch).astype(np.float32)
    terminal = np.array([0, 1, 0, 0, 1], np.float32)
    agent = agents[1]
    agent.alg.sync_target(0.0)
    weights = agent.alg.model.get_weights()
    weights["critic_model.0.weight"] *= 3.0
    agent.alg.model.set_weights(weights)
    # The online critic now differs from the target: the target must use the latter.
    target = agent.critic_target(reward, terminal, obs_n, act_n)
    joint = np.concatenate([*obs_n, *act_n], axis=1)
    next_q = _mlp_numpy(paddle_layout(agent.alg.target_model), "critic_model", joint)[:, 0]
    np.testing.assert_allclose(target, reward + 0.9 * (1 - terminal) * next_q, rtol=1e-5)

    q = _mlp_numpy(paddle_layout(agent.alg.model), "critic_model", joint)[:, 0]
    cost = agent.alg.learn(obs_n, act_n, target)
    np.testing.assert_allclose(float(cost), np.mean((q - target) ** 2), rtol=1e-5)


def test_learn_moves_the_target_by_tau_and_the_actor(backend):
    agents = _agents([2], [gym.spaces.Discrete(3)], backend=backend, tau=0.25)
    alg = agents[0].alg
    before, target_before = alg.model.get_weights(), alg.target_model.get_weights()
    obs = np.ones((4, 2), np.float32)
    alg.learn([obs], [np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]], np.ones(4))
    after, target_after = alg.model.get_weights(), alg.target_model.get_weights()
    name = "actor_model.0.weight"
    assert not np.allclose(after[name], before[name]), "the actor did not move"
    np.testing.assert_allclose(
        target_after[name], 0.75 * target_before[name] + 0.25 * after[name], rtol=1e-5
    )


def test_discrete_actions_are_one_hot_greedy_and_relaxed_samples(backend):
    agent = _agents([2], [gym.spaces.Discrete(4)], backend=backend)[0]
    greedy = agent.predict(np.zeros((3, 2)))
    assert greedy.shape == (3, 4) and set(np.unique(greedy)) <= {0.0, 1.0}
    np.testing.assert_array_equal(greedy.sum(1), 1.0)
    sample = agent.sample(np.zeros(2))
    assert sample.shape == (4,) and np.isclose(sample.sum(), 1.0) and (sample > 0).all()


def test_three_agents_learn_on_simple_spread():
    env = ParticleEnv("simple_spread", max_cycles=10)
    agents = _agents(env.obs_shape_n, env.action_space)
    obs_n, _ = env.reset(seed=0)
    costs = []
    for _ in range(30):
        act_n = [agent.sample(obs) for agent, obs in zip(agents, obs_n, strict=True)]
        next_obs_n, reward_n, terminated_n, truncated_n, _ = env.step(act_n)
        for i, agent in enumerate(agents):
            agent.add_experience(obs_n[i], act_n[i], reward_n[i], next_obs_n[i], terminated_n[i])
        obs_n = env.reset()[0] if any(truncated_n) else next_obs_n
        costs += [agent.learn(agents) for agent in agents]
    steps = [c for c in costs if c is not None]
    assert len(steps) == 3 * 23 and np.isfinite(steps).all()


def test_bad_construction_is_refused():
    model = MAModel(2, 3, 10)
    with pytest.raises(ValueError, match="act_space must be the list of every agent's action"):
        MADDPG(model, 0, None)
    with pytest.raises(ValueError, match=r"act_space\[0\] must be Discrete or a 1-D Box"):
        MADDPG(model, 0, [gym.spaces.MultiBinary(3)])
    with pytest.raises(ValueError, match=r"agent_index must be an int in \[0, 2\)"):
        MADDPG(model, -1, [gym.spaces.Discrete(3)] * 2)
    with pytest.raises(ValueError, match="one size per agent"):
        MADDPGAgent(MADDPG(model, 0, [gym.spaces.Discrete(3)] * 2), [2], [3, 3])


def test_agent_team_saves_and_restores_every_member(tmp_path):
    from parl.core.errors import CheckpointError
    from parl.core.tensor_files import read_tensor_file, write_tensor_file

    from parl_algos_marl import AgentTeam

    spaces = [gym.spaces.Discrete(3), gym.spaces.Discrete(3)]
    team, other = AgentTeam(_agents([2, 2], spaces, 0)), AgentTeam(_agents([2, 2], spaces, 1))
    obs = (np.ones((4, 2), np.float32), -np.ones((4, 2), np.float32))
    team.save(tmp_path / "team.ckpt")
    before = other.get_weights()
    team.agents[0].save(tmp_path / "one.ckpt")
    with pytest.raises(CheckpointError, match="not a team weights file"):
        other.restore(tmp_path / "one.ckpt")
    bigger = AgentTeam(_agents([2, 2, 2], [*spaces, gym.spaces.Discrete(3)], 2))
    with pytest.raises(CheckpointError, match=r"unexpected \['agent2/"):
        other.set_weights(bigger.get_weights())
    assert all(np.array_equal(v, other.get_weights()[k]) for k, v in before.items())
    # A team file names its backend (it did not: a torch team's file loaded into paddle).
    loaded = read_tensor_file(tmp_path / "team.ckpt")
    assert loaded.metadata["backend"] == "paddle"
    unnamed = {k: v for k, v in loaded.metadata.items() if k != "backend"}
    write_tensor_file(tmp_path / "unnamed.ckpt", loaded.tensors, unnamed)
    with pytest.raises(CheckpointError, match="does not say which framework wrote it"):
        other.restore(tmp_path / "unnamed.ckpt")
    write_tensor_file(tmp_path / "torch.ckpt", loaded.tensors, {**unnamed, "backend": "torch"})
    with pytest.raises(CheckpointError, match="written on the torch backend"):
        other.restore(tmp_path / "torch.ckpt")
    assert all(np.array_equal(v, other.get_weights()[k]) for k, v in before.items())
    other.restore(tmp_path / "team.ckpt")
    for mine, theirs in zip(team.predict(obs), other.predict(obs), strict=True):
        np.testing.assert_array_equal(mine, theirs)


@pytest.mark.torch
def test_device_moves_the_models_and_paddle_refuses_a_gpu():
    agent = _agents([2], [gym.spaces.Discrete(3)], backend="torch")[0]
    alg = MADDPG(agent.alg.model, 0, [gym.spaces.Discrete(3)], device="cpu")
    assert (
        str(alg.device) == "cpu" and str(MADDPGAgent(alg, [2], [3], device="cpu").device) == "cpu"
    )
    paddle_model = MAModel(2, 3, 5, backend="paddle")
    with pytest.raises(ValueError, match="paddle backend takes no device argument"):
        MADDPG(paddle_model, 0, [gym.spaces.Discrete(3)], device="cuda")


def test_loads_a_checkpoint_and_weights_of_the_previous_version():
    # Written by the paddle-only MADDPG before it was written once for both frameworks.
    expected = np.load(FIXTURES / "maddpg_paddle_expected.npz")
    contract = TestMADDPGContract()
    contract.backend, contract.algorithm_class = "paddle", MADDPG
    for load, suffix in (("load_checkpoint", "ckpt"), ("restore", "weights")):
        agent = contract.make_agent(0)
        getattr(agent, load)(FIXTURES / f"maddpg_paddle.{suffix}")
        np.testing.assert_allclose(
            agent.predict(expected["probe"]), expected["expected"], rtol=1e-6
        )


def test_parl2_agents_read_the_discount_from_the_algorithm() -> None:
    """PARL 2.x's MADDPG agents compute their targets with ``self.alg.gamma``."""
    from parl_algos_marl import MADDPG

    assert MADDPG.gamma.__doc__ and "PARL 2.x" in MADDPG.gamma.__doc__
