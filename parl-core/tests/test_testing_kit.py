"""parl.testing: identity envs, the conformance check, the contract tests, registration."""

from __future__ import annotations

import copy
from pathlib import Path

import parl
from parl.core.config import AlgorithmConfig
from parl.core.errors import WeightsMismatchError
from parl.core.paddle.batch import to_tensor
from parl.testing import (
    AlgorithmContract,
    BadInput,
    ConformanceError,
    CooperativeIdentityEnv,
    IdentityEnv,
    IdentityEnvBox,
    check_algorithm,
    registered_algorithm,
)

import numpy as np
import paddle
import pytest
from gymnasium.utils.env_checker import check_env
from pydantic import BaseModel, ConfigDict, PositiveFloat


@pytest.mark.parametrize(
    "env", [IdentityEnv(n=3), IdentityEnvBox(dim=2), CooperativeIdentityEnv(n_agents=2, n=3)]
)
def test_identity_envs_pass_gymnasiums_checker(env) -> None:
    check_env(env, skip_render_check=True)


def test_identity_env_rewards_the_identity_policy() -> None:
    env = IdentityEnv(n=4, episode_length=10)
    obs, _ = env.reset(seed=1)
    total, done = 0.0, False
    while not done:
        obs, reward, done, _, _ = env.step(int(np.argmax(obs)))
        total += reward
    assert total == 10.0
    box = IdentityEnvBox(dim=2, episode_length=5)
    obs, _ = box.reset(seed=1)
    assert box.step(obs)[1] == 0.0
    with pytest.raises(ValueError, match="shape"):
        box.step(np.zeros(3))


def test_cooperative_identity_env_shares_the_fraction_of_agents_right() -> None:
    env = CooperativeIdentityEnv(n_agents=3, n=4, episode_length=2)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(env.state(), obs.reshape(-1))
    targets = obs.argmax(axis=1)
    wrong_one = targets.copy()
    wrong_one[1] = (targets[1] + 1) % 4
    obs, reward, terminated, _, _ = env.step(wrong_one)
    assert reward == pytest.approx(2 / 3) and not terminated
    assert env.step(obs.argmax(axis=1))[1:3] == (1.0, True)
    with pytest.raises(ValueError, match=r"3 ints in \[0, 4\), one per agent"):
        env.step([0, 1])
    with pytest.raises(ValueError, match="n_agents >= 2"):
        CooperativeIdentityEnv(n_agents=1)


class GoodConfig(AlgorithmConfig):
    lr: float = 0.1
    """Learning rate."""


class Good(parl.Algorithm):
    """Good: an algorithm that follows the contract."""

    Config = GoodConfig

    def __init__(self, model, **options) -> None:
        super().__init__(model, **options)
        self.target_model = copy.deepcopy(model)


def test_conformance_passes_for_a_good_algorithm(tiny_model_cls: type) -> None:
    check_algorithm(Good, lambda: Good(tiny_model_cls()))


def test_conformance_catches_an_unfrozen_permissive_config() -> None:
    class LooseConfig(BaseModel):
        model_config = ConfigDict(extra="ignore")
        lr: float = 0.1

    class Loose(parl.Algorithm):
        """Loose: breaks the config rules."""

        Config = LooseConfig

    with pytest.raises(ConformanceError, match="extra='forbid'"):
        check_algorithm(Loose)


def test_conformance_catches_undocumented_fields() -> None:
    class BareConfig(AlgorithmConfig):
        lr: float = 0.1

    class Bare(parl.Algorithm):
        """Bare: a field without a docstring."""

        Config = BareConfig

    with pytest.raises(ConformanceError, match=r"without a docstring: \['lr'\]"):
        check_algorithm(Bare)


def test_conformance_catches_get_weights_of_every_model(tiny_model_cls: type) -> None:
    class Nested(Good):
        """Nested: get_weights of every model, not PARL's flat dict."""

        def get_weights(self):
            return {path: m.get_weights() for path, m in self.named_models()}

    with pytest.raises(ConformanceError, match="flat weights of algorithm.model"):
        check_algorithm(Nested, lambda: Nested(tiny_model_cls()))


def test_conformance_catches_half_applied_weights(tiny_model_cls: type) -> None:
    class HalfApplied(Good):
        """HalfApplied: writes each weight as it checks it."""

        def set_weights(self, weights):
            for name, tensor in self.model.state_dict().items():
                value = np.asarray(weights[name])
                if value.shape != tuple(tensor.shape):
                    raise WeightsMismatchError(f"{name} has the wrong shape")
                tensor.set_value(value.astype(np.float32))

    with pytest.raises(ConformanceError, match="wrong shape changed some weights before"):
        check_algorithm(HalfApplied, lambda: HalfApplied(tiny_model_cls()))


def test_conformance_catches_shared_weights(tiny_model_cls: type) -> None:
    class Shared(Good):
        """Shared: its deep copy shares the model (a broken __deepcopy__)."""

        def __deepcopy__(self, memo):
            return self

    with pytest.raises(ConformanceError, match="deep copy shares weights"):
        check_algorithm(Shared, lambda: Shared(tiny_model_cls()))


def test_registered_algorithm_is_temporary() -> None:
    with registered_algorithm("GoodTemp", Good):
        assert parl.algorithms.get("GoodTemp") is Good
        assert "GoodTemp" in parl.algorithms.names()
    assert "GoodTemp" not in parl.algorithms.names()
    with pytest.raises(LookupError):
        parl.algorithms.get("GoodTemp")


# -- the contract tests, run on a tiny family, and shown to fail on broken ones ----------------


class OneHotModel(parl.Model):
    def __init__(self) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(4, 4)

    def forward(self, obs):
        return self.fc(obs)


class RegressionConfig(AlgorithmConfig):
    lr: PositiveFloat = 0.5
    """Learning rate of the SGD-with-momentum optimizer."""


class Regression(parl.Algorithm):
    """Regression: fits the model's outputs to targets, a stand-in family for kit tests."""

    Config = RegressionConfig

    def __init__(self, model: parl.Model, **options) -> None:
        super().__init__(model, **options)
        self.optimizer = paddle.optimizer.Momentum(
            self.config.lr, momentum=0.5, parameters=model.parameters()
        )

    def predict(self, obs):
        return self.model(obs)

    def learn(self, obs, target):
        loss = (self.model(obs) - target).square().mean()
        self.optimizer.clear_grad()
        loss.backward()
        self.optimizer.step()
        return loss


class RegressionAgent(parl.Agent):
    def predict(self, obs):
        return self.alg.predict(to_tensor(obs, "float32")).numpy().argmax(-1)

    def sample(self, obs):
        return self.predict(obs)

    def learn(self, obs, target):
        obs, target = to_tensor(obs, "float32"), to_tensor(target, "float32")
        if obs.ndim != 2:
            raise ValueError(f"RegressionAgent.learn needs obs [B, 4], got {list(obs.shape)}")
        return float(self.alg.learn(obs, target))


class RegressionContract(AlgorithmContract):
    algorithm_class = Regression
    train_steps = 40
    short_train_steps = 5

    def make_agent(self, seed: int, **config) -> parl.Agent:
        parl.set_seed(seed)
        return RegressionAgent(Regression(OneHotModel(), **config))

    def learn_batch(self, agent, rng):
        obs = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 16)]
        return agent.learn(obs, obs)

    def bad_inputs(self, agent):
        yield BadInput(
            "unbatched obs to learn",
            lambda: agent.learn(np.zeros(4), np.zeros(4)),
            ValueError,
            r"obs \[B, 4\]",
        )


class TestRegressionContract(RegressionContract):
    """The whole contract suite on a tiny family: the kit works end to end."""


def test_the_cross_backend_test_is_made_only_for_two_backends_and_never_over_a_familys_own():
    class Paddle(AlgorithmContract):
        algorithm_name = "DQN"

    class Both(AlgorithmContract):
        algorithm_name, backends = "DQN", ("paddle", "torch")

    class Own(Both):
        def test_cross_backend_learn(self) -> None:
            """The family's own comparison."""

    class BelowOwn(Own):
        pass

    assert Paddle.test_cross_backend_learn is None
    assert Both.test_cross_backend_learn is AlgorithmContract._cross_backend_learn
    assert Own.test_cross_backend_learn.__doc__ == "The family's own comparison."
    assert BelowOwn.test_cross_backend_learn is Own.test_cross_backend_learn


class CountingAgent(RegressionAgent):
    """Decays its learning rate with a counter it forgets to declare in checkpoint_state."""

    def __init__(self, algorithm: parl.Algorithm) -> None:
        super().__init__(algorithm)
        self.steps = 0

    def learn(self, obs, target):
        self.steps += 1
        self.alg.optimizer.set_lr(0.5 / self.steps)
        return super().learn(obs, target)


class OffsetRegression(Regression):
    """OffsetRegression: predictions also use a learned offset that lives outside the model."""

    checkpoint_state = ("offset",)

    def __init__(self, model: parl.Model, **options) -> None:
        super().__init__(model, **options)
        self.offset = paddle.create_parameter([4], "float32")

    def predict(self, obs):
        return self.model(obs) + self.offset


def test_resume_test_catches_undeclared_state(tmp_path: Path) -> None:
    class Broken(RegressionContract):
        def make_agent(self, seed: int, **config) -> parl.Agent:
            parl.set_seed(seed)
            return CountingAgent(Regression(OneHotModel(), **config))

    with pytest.raises(AssertionError, match="differ"):
        Broken().test_checkpoint_resume(tmp_path)


def test_save_restore_test_catches_state_outside_the_model(tmp_path: Path) -> None:
    class Broken(RegressionContract):
        algorithm_class = OffsetRegression

        def make_agent(self, seed: int, **config) -> parl.Agent:
            parl.set_seed(seed)
            return RegressionAgent(OffsetRegression(OneHotModel(), **config))

    with pytest.raises(AssertionError):
        Broken().test_save_restore(tmp_path)


def test_bad_input_test_catches_a_call_that_does_not_fail(tmp_path: Path) -> None:
    class Broken(RegressionContract):
        def bad_inputs(self, agent):
            yield BadInput("a fine call", lambda: agent.predict(np.eye(4)), ValueError, "x")

    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        Broken().test_bad_inputs(tmp_path)
