"""A2C, DDPG, TD3, SAC, OAC, CQL and IQL through the contract suite, and what only they have."""

from __future__ import annotations

import functools
from typing import ClassVar

import parl
from parl.core.errors import ModelContractError
from parl.testing import AlgorithmContract, BadInput, IdentityEnvBox
from parl.utils import make_vector_env
from parl.utils.offline import collect, concatenate

import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_ac import (
    A2C,
    DDPG,
    IQL,
    SAC,
    TD3,
    A2CAgent,
    ContinuousAgent,
    DeterministicActorCritic,
    DiscreteActorCritic,
    GaussianActorCritic,
    GaussianActorCriticValue,
    SACConfig,
)
from parl_algos_ac.sac import TanhGaussianActing

EYE = np.eye(4, dtype=np.float32)


class ContinuousContract(AlgorithmContract):
    """The identity task in one dimension: the best action equals the observation."""

    action_kind = "continuous"
    solved_score = -0.02
    train_steps = 300
    short_train_steps = 20
    options: ClassVar[dict] = {}

    backends = ("paddle", "torch")

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        critics = 1 if self.algorithm_class is DDPG else 2
        stochastic = issubclass(self.algorithm_class, TanhGaussianActing)
        network = GaussianActorCritic if stochastic else DeterministicActorCritic
        if self.algorithm_class is IQL:
            network = GaussianActorCriticValue
        model = network(1, 1, hidden_sizes=(32, 32), num_critics=critics, backend=self.backend)
        algorithm = self.algorithm_class(
            model, gamma=0.5, actor_lr=3e-3, critic_lr=3e-3, **self.options, **config
        )
        return ContinuousAgent(algorithm, expl_noise=0.3, seed=seed)

    def learn_batch(self, agent, rng):
        obs = rng.uniform(-1, 1, (64, 1)).astype(np.float32)
        action = rng.uniform(-1, 1, (64, 1)).astype(np.float32)
        reward = -((action - obs) ** 2).mean(axis=1)
        next_obs = rng.uniform(-1, 1, (64, 1)).astype(np.float32)
        return agent.learn(obs, action, reward, next_obs, rng.random(64) < 0.5)

    def bad_inputs(self, agent):
        obs, act, rew = np.zeros((3, 1), np.float32), np.zeros((3, 1), np.float32), np.zeros(3)
        yield from (
            BadInput(
                "actions outside [-1, 1]",
                lambda: agent.learn(obs, act + 2.0, rew, obs, rew),
                ValueError,
                r"actions must lie in \[-1, 1\]",
            ),
            BadInput(
                "integer actions",
                lambda: agent.learn(obs, np.zeros((3, 1), np.int64), rew, obs, rew),
                TypeError,
                "continuous actions must be floats",
            ),
            BadInput(
                "observations the model was not built for",
                lambda: agent.learn(np.zeros((3, 5)), act, rew, np.zeros((3, 5)), rew),
                ValueError,
                r"could not take observations \[\d+, 5\]",
            ),
            BadInput(
                "rewards of another batch",
                lambda: agent.learn(obs, act, rew[:2], obs, rew),
                ValueError,
                r"reward must have shape \[3\]",
            ),
            BadInput(
                "next_obs of another batch",
                lambda: agent.learn(obs, act, rew, obs[:2], rew),
                ValueError,
                "obs and next_obs",
            ),
            BadInput(
                "one unbatched observation in learn",
                lambda: agent.learn(obs[0], act, rew, obs, rew),
                ValueError,
                "must be a batch",
            ),
            BadInput(
                "tau above 1",
                lambda: self.make_agent(0, tau=1.5),
                pydantic.ValidationError,
                "tau",
            ),
        )


class TestDDPGContract(ContinuousContract):
    algorithm_name = "DDPG"


class TestTD3Contract(ContinuousContract):
    algorithm_name = "TD3"
    train_steps = 400


class TestSACContract(ContinuousContract):
    algorithm_name = "SAC"
    options: ClassVar[dict] = {"alpha": 0.01}


class TestSACAutoAlphaContract(ContinuousContract):
    algorithm_name = "SAC"
    options: ClassVar[dict] = {"alpha": "auto", "initial_alpha": 0.05}


class TestOACContract(ContinuousContract):
    algorithm_name = "OAC"
    options: ClassVar[dict] = {"alpha": 0.01, "beta": 2.0, "delta": 0.5}


@functools.cache
def identity_dataset() -> dict[str, np.ndarray]:
    """A "medium-replay"-like dataset of the identity task: half uniformly random actions,
    half near-optimal ones with a little noise (cloning all of it is biased towards 0)."""
    envs = lambda: make_vector_env(lambda: IdentityEnvBox(1, episode_length=20), 1)  # noqa: E731
    rng = np.random.default_rng(0)
    random = collect(envs(), lambda obs: rng.uniform(-1, 1, obs.shape), 1000, seed=0)
    noisy = collect(
        envs(), lambda obs: np.clip(obs + rng.normal(0, 0.1, obs.shape), -1, 1), 1000, seed=1
    )
    return concatenate([random, noisy])


class OfflineContract(ContinuousContract):
    """Learns the identity task from a fixed dataset that :func:`collect` built."""

    def learn_batch(self, agent, rng):
        data = identity_dataset()
        index = rng.integers(0, len(data["rewards"]), 64)
        return agent.learn(
            data["observations"][index],
            data["actions"][index],
            data["rewards"][index],
            data["next_observations"][index],
            data["terminals"][index],
        )


class TestCQLContract(OfflineContract):
    algorithm_name = "CQL"
    options: ClassVar[dict] = {
        "policy_eval_start": 50,
        "with_automatic_entropy_tuning": False,
        "alpha": 0.01,
        "min_q_weight": 1.0,
        "num_random": 3,
    }


class TestIQLContract(OfflineContract):
    algorithm_name = "IQL"
    options: ClassVar[dict] = {"expectile": 0.7, "temperature": 3.0}


class TestA2CContract(AlgorithmContract):
    """A contextual bandit on the identity task: advantage = reward − value."""

    algorithm_name = "A2C"
    backends = ("paddle", "torch")
    train_steps = 300
    short_train_steps = 20

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        model = DiscreteActorCritic(4, 4, hidden_sizes=(32,), backend=self.backend)
        return A2CAgent(self.algorithm_class(model, **config))

    def explore(self, agent, obs):
        return int(agent.sample(obs[None])[0][0])

    def learn_batch(self, agent, rng):
        obs = EYE[rng.integers(0, 4, 32)]
        actions, values = agent.sample(obs)
        reward = (actions == obs.argmax(1)).astype(np.float32)
        return agent.learn(obs, actions, reward - values, reward, 1e-2, -0.01)

    def bad_inputs(self, agent):
        obs, act, adv = EYE[:3], np.zeros(3, np.int64), np.zeros(3, np.float32)
        yield from (
            BadInput(
                "an action the model does not have",
                lambda: agent.learn(obs, act + 4, adv, adv, 1e-3, -0.01),
                ValueError,
                r"actions must lie in \[0, 4\)",
            ),
            BadInput(
                "float actions",
                lambda: agent.learn(obs, adv, adv, adv, 1e-3, -0.01),
                TypeError,
                "must be integers",
            ),
            BadInput(
                "advantages of another batch",
                lambda: agent.learn(obs, act, adv[:2], adv, 1e-3, -0.01),
                ValueError,
                r"advantages must have shape \[3\]",
            ),
            BadInput(
                "a negative learning rate",
                lambda: agent.learn(obs, act, adv, adv, -1e-3, -0.01),
                ValueError,
                "learning_rate must be a number >= 0",
            ),
            BadInput(
                "an infinite learning rate",
                lambda: agent.learn(obs, act, adv, adv, float("inf"), -0.01),
                ValueError,
                "learning_rate must be finite",
            ),
            BadInput(
                "an entropy coefficient that is not a number",
                lambda: agent.learn(obs, act, adv, adv, 1e-3, "0.01"),
                ValueError,
                "entropy_coeff must be a number",
            ),
            BadInput(
                "observations the model was not built for",
                lambda: agent.learn(np.zeros((3, 7)), act, adv, adv, 1e-3, -0.01),
                ValueError,
                r"could not take observations \[3, 7\]",
            ),
        )


def test_a2c_learning_rate_zero_is_a_step_that_changes_nothing() -> None:
    """PARL's A2C schedules decay to 0.0 and PARL sets the rate it is given (issue 20)."""
    parl.set_seed(0)
    agent = A2CAgent(A2C(DiscreteActorCritic(4, 4, hidden_sizes=(32,))))
    obs, act = EYE[[0, 1, 2, 3]], np.array([0, 1, 2, 3])
    adv = np.array([1.0, -1.0, 0.5, 2.0], np.float32)
    before = agent.get_weights()
    losses = agent.learn(obs, act, adv, adv, 0.0, -0.01)
    assert all(np.isfinite(float(loss)) for loss in losses)
    after = agent.get_weights()
    assert all(np.array_equal(before[name], after[name]) for name in before)
    agent.learn(obs, act, adv, adv, 1e-2, -0.01)
    moved = agent.get_weights()
    assert any(not np.array_equal(after[name], moved[name]) for name in after)


@pytest.mark.parametrize(
    ("cls", "options", "field"),
    [
        (DDPG, {"gamma": 0.0}, "gamma"),
        (DDPG, {"actor_lr": -1.0}, "actor_lr"),
        (TD3, {"policy_freq": 0}, "policy_freq"),
        (TD3, {"noise_clip": -0.1}, "noise_clip"),
        (SAC, {"alpha": "automatic"}, "alpha"),
        (SAC, {"alpha": -0.2}, "alpha"),
        (SAC, {"initial_alpha": 0.0}, "initial_alpha"),
        (A2C, {"vf_loss_coeff": -1.0}, "vf_loss_coeff"),
    ],
)
def test_bad_config_names_the_field(cls, options, field) -> None:
    model = DiscreteActorCritic(2, 2) if cls is A2C else GaussianActorCritic(2, 1)
    with pytest.raises(pydantic.ValidationError, match=field):
        cls(model, **options)


def test_parl_signatures_and_defaults() -> None:
    sac = SAC(GaussianActorCritic(2, 1), 0.9, 0.01, 0.1, 1e-4, 2e-4)
    assert sac.config == SACConfig(gamma=0.9, tau=0.01, alpha=0.1, actor_lr=1e-4, critic_lr=2e-4)
    td3 = TD3(DeterministicActorCritic(2, 1, num_critics=2), None, None, None, None, 0.3, 0.6, 3)
    assert (td3.config.policy_noise, td3.config.noise_clip, td3.config.policy_freq) == (0.3, 0.6, 3)
    assert A2C(DiscreteActorCritic(2, 2), 0.25).config.vf_loss_coeff == 0.25


@pytest.mark.parametrize("cls", [DDPG, TD3, SAC])
def test_model_missing_a_method_is_refused(cls) -> None:
    class NoCriticParams(parl.Model):
        def policy(self, obs):
            return obs

        def value(self, obs, act):
            return obs

        def get_actor_params(self):
            return []

    with pytest.raises(ModelContractError, match="get_critic_params"):
        cls(NoCriticParams())
    with pytest.raises(ModelContractError, match="policy_and_value"):
        A2C(NoCriticParams())
    with pytest.raises(TypeError, match="parl.Model"):
        cls(None)


def test_sac_policy_must_return_mean_and_log_std() -> None:
    algorithm = SAC(DeterministicActorCritic(2, 1, num_critics=2))
    with pytest.raises(TypeError, match=r"\(mean, log_std\)"):
        algorithm.predict(np.zeros((1, 2), np.float32))


def test_registry_lookup() -> None:
    for name, cls in {"A2C": A2C, "DDPG": DDPG, "TD3": TD3, "SAC": SAC}.items():
        assert parl.algorithms.get(name) is cls


def test_auto_alpha_is_saved_and_restored(tmp_path) -> None:
    def agent() -> ContinuousAgent:
        model = GaussianActorCritic(1, 1, hidden_sizes=(8,))
        return ContinuousAgent(SAC(model, alpha="auto", actor_lr=0.1), seed=0)

    trained, fresh = agent(), agent()
    obs = np.zeros((4, 1), np.float32)
    for _ in range(3):
        trained.learn(obs, np.zeros((4, 1), np.float32), np.zeros(4), obs, np.zeros(4))
    assert float(trained.alg.alpha) != pytest.approx(1.0)
    trained.save_checkpoint(tmp_path / "run.ckpt")
    fresh.load_checkpoint(tmp_path / "run.ckpt")
    assert float(fresh.alg.log_alpha) == float(trained.alg.log_alpha)
    # The optimizer still updates the very parameter that was loaded in place.
    assert fresh.alg.alpha_optimizer._parameter_list[0] is fresh.alg.log_alpha


def test_fixed_alpha_does_not_move() -> None:
    agent = ContinuousAgent(SAC(GaussianActorCritic(1, 1, hidden_sizes=(8,)), alpha=0.3))
    obs = np.zeros((4, 1), np.float32)
    agent.learn(obs, obs, np.zeros(4), obs, np.zeros(4))
    assert float(agent.alg.alpha) == pytest.approx(0.3) and agent.alg.alpha_loss is None


def test_td3_delays_the_actor_and_the_target() -> None:
    algorithm = TD3(DeterministicActorCritic(1, 1, hidden_sizes=(8,), num_critics=2))
    actor = {k: v.numpy().copy() for k, v in algorithm.model.actor.state_dict().items()}
    target = algorithm.target_model.get_weights()
    obs = np.zeros((4, 1), np.float32)
    algorithm.learn(obs, obs, np.ones(4), obs, np.zeros(4))
    assert all(
        np.array_equal(v.numpy(), actor[k]) for k, v in algorithm.model.actor.state_dict().items()
    )
    kept = algorithm.target_model.get_weights()
    assert all(np.array_equal(v, target[k]) for k, v in kept.items())
    algorithm.learn(obs, obs, np.ones(4), obs, np.zeros(4))
    moved = algorithm.target_model.get_weights()
    assert any(not np.array_equal(v, target[k]) for k, v in moved.items())
    assert algorithm.total_it == 2


def test_continuous_agent_explores_within_bounds() -> None:
    agent = ContinuousAgent(DDPG(DeterministicActorCritic(2, 3)), expl_noise=2.0, seed=0)
    obs = np.zeros((500, 2), np.float32)
    actions = agent.sample(obs)
    assert actions.shape == (500, 3) and np.abs(actions).max() <= 1.0
    assert actions.std() > 0.5  # the noise is there
    with pytest.raises(ValueError, match="expl_noise"):
        ContinuousAgent(agent.alg, expl_noise=-1.0)
    with pytest.raises(TypeError, match="DDPG, TD3 or SAC"):
        ContinuousAgent(A2C(DiscreteActorCritic(2, 2)))
    sac = ContinuousAgent(SAC(GaussianActorCritic(2, 3)))
    assert np.abs(sac.sample(obs)).max() < 1.0


def test_ensemble_runs_each_critic_on_its_own_weights() -> None:
    model = DeterministicActorCritic(2, 1, hidden_sizes=(4,), num_critics=2)
    obs, act = paddle.rand([5, 2]), paddle.rand([5, 1])
    both = model.value(obs, act).numpy()
    x = np.concatenate([obs.numpy(), act.numpy()], axis=1)
    weights = [w.numpy() for w in model.critic.weights]
    biases = [b.numpy() for b in model.critic.biases]
    for k in range(2):
        hidden = np.maximum(x @ weights[0][k] + biases[0][k], 0)
        np.testing.assert_allclose(both[k], (hidden @ weights[1][k] + biases[1][k])[:, 0], 1e-5)
    assert not np.allclose(both[0], both[1])
