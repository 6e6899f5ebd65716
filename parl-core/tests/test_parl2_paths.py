"""PARL 2.x's import paths and distribution names resolve to this package's classes."""

from __future__ import annotations

import math

import parl
from parl.core.config import AlgorithmConfig
from parl.core.distributions import Categorical, DiagGaussian
from parl.core.errors import UnknownAlgorithmError
from parl.testing import registered_algorithm

import numpy as np
import paddle
import pytest


class PathConfig(AlgorithmConfig):
    """No hyperparameters."""


class PathAlgorithm(parl.Algorithm):
    Config = PathConfig


def test_core_paddle_modules_alias_the_core_classes() -> None:
    import parl.core.paddle as core_paddle
    from parl.core.paddle.agent import Agent
    from parl.core.paddle.algorithm import Algorithm
    from parl.core.paddle.model import Model

    assert (Model, Algorithm, Agent) == (parl.Model, parl.Algorithm, parl.Agent)
    assert (core_paddle.Model, core_paddle.Algorithm, core_paddle.Agent) == (
        Model,
        Algorithm,
        Agent,
    )


def test_algorithms_paddle_goes_through_the_registry() -> None:
    with registered_algorithm("PathAlgorithm", PathAlgorithm):
        from parl.algorithms.paddle import PathAlgorithm as imported

        assert imported is PathAlgorithm
        assert parl.algorithms.paddle.PathAlgorithm is PathAlgorithm
        assert "PathAlgorithm" in dir(parl.algorithms.paddle)
    with pytest.raises(AttributeError, match="PathAlgorithm"):
        parl.algorithms.paddle.PathAlgorithm  # noqa: B018  (unregistered again)


def test_algorithms_paddle_unknown_name_keeps_the_registry_error() -> None:
    with pytest.raises(UnknownAlgorithmError, match="NoSuchAlgo"):
        from parl.algorithms.paddle import NoSuchAlgo  # noqa: F401


def _pd():
    from parl.core.paddle import policy_distribution

    return policy_distribution


def test_categorical_logp_is_the_log_softmax() -> None:
    logits = paddle.to_tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    dist = _pd().CategoricalDistribution(logits)
    actions = paddle.to_tensor([2, 1])
    expected = Categorical(logits).log_prob(actions).numpy()
    np.testing.assert_allclose(dist.logp(actions).numpy(), expected)
    np.testing.assert_allclose(expected[1], math.log(1 / 3), rtol=1e-6)
    assert isinstance(dist, Categorical) and isinstance(dist, _pd().PolicyDistribution)


def test_diag_gaussian_from_mean_logstd_pair() -> None:
    mean = paddle.to_tensor([[0.5, -1.0]], stop_gradient=False)
    logstd = paddle.to_tensor([[0.0, math.log(2.0)]], stop_gradient=False)
    dist = _pd().DiagGaussianDistribution((mean, logstd))
    np.testing.assert_allclose(dist.std.numpy(), [[1.0, 2.0]], rtol=1e-6)
    reference = DiagGaussian(mean, logstd.exp())
    np.testing.assert_allclose(dist.logp(mean).numpy(), reference.log_prob(mean).numpy())
    dist.sample().sum().backward()  # PARL's sample is reparameterised: gradients reach both
    assert mean.grad is not None and logstd.grad is not None


def test_soft_categorical_sample_is_a_differentiable_relaxed_one_hot() -> None:
    paddle.seed(0)
    logits = paddle.to_tensor([[5.0, 0.0, 0.0], [0.0, 0.0, 0.0]], stop_gradient=False)
    sample = _pd().SoftCategoricalDistribution(logits).sample()
    assert sample.shape == [2, 3]
    np.testing.assert_allclose(sample.sum(-1).numpy(), [1.0, 1.0], rtol=1e-5)
    (sample[:, 0]).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_soft_multi_categorical_splits_per_dimension() -> None:
    paddle.seed(0)
    logits = paddle.to_tensor([[9.0, 0.0, 0.0, 9.0, 0.0]])
    dist = _pd().SoftMultiCategoricalDistribution(logits, low=[0, 1], high=[1, 3])
    sample = dist.sample()
    assert sample.shape == [1, 5]
    assert dist.mode().tolist() == [[0, 2]]  # argmax 0 + low 0, argmax 1 + low 1
    first, second = Categorical(logits[:, :2]), Categorical(logits[:, 2:])
    np.testing.assert_allclose(
        dist.entropy().numpy(), (first.entropy() + second.entropy()).numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(dist.kl(dist).numpy(), [0.0], atol=1e-6)


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda pd: pd.CategoricalDistribution(paddle.zeros([2, 1, 3])), ValueError, "2-D"),
        (lambda pd: pd.SoftCategoricalDistribution(paddle.zeros([3])), ValueError, "2-D"),
        (lambda pd: pd.DiagGaussianDistribution(paddle.zeros([2, 2])), TypeError, "mean, logstd"),
        (
            lambda pd: pd.DiagGaussianDistribution((paddle.zeros([2]), paddle.zeros([2]))),
            ValueError,
            "2-D",
        ),
        (
            lambda pd: pd.SoftMultiCategoricalDistribution(paddle.zeros([1, 4]), [0, 0], [1, 2]),
            ValueError,
            "side by side",
        ),
        (
            lambda pd: pd.SoftMultiCategoricalDistribution(paddle.zeros([1, 4]), [2], [1]),
            ValueError,
            "high >= low",
        ),
    ],
)
def test_bad_distribution_inputs_name_the_problem(build, error, match) -> None:
    with pytest.raises(error, match=match):
        build(_pd())


class Forward(parl.Model):
    def __init__(self) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(4, 2)

    def forward(self, obs):
        return self.fc(obs)


@pytest.mark.parametrize(
    ("shapes", "dtypes", "match"),
    [
        ((None, 4), ["float32", "float32"], "one shape per forward input"),
        ([[None, 4]], "float32", "one dtype name per forward input"),
    ],
)
def test_save_inference_model_names_a_bare_shape_or_dtype(tmp_path, shapes, dtypes, match):
    """PARL asserted on these; a bare shape used to end in paddle's 'NoneType' TypeError."""
    agent = parl.Agent(PathAlgorithm(Forward()))
    with pytest.raises(TypeError, match=match):
        agent.save_inference_model(tmp_path / "model", shapes, dtypes)
    assert not list(tmp_path.iterdir())


# -- parl.core.{model,algorithm,agent}_base: PARL 2.x's framework-free bases ----------------


def _bases():
    from parl.core.agent_base import AgentBase
    from parl.core.algorithm_base import AlgorithmBase
    from parl.core.model_base import ModelBase

    return ModelBase, AlgorithmBase, AgentBase


def _scalar_model():
    model_base = _bases()[0]

    class Scalar(model_base):
        def __init__(self, weights) -> None:
            self.weights = weights

        def forward(self, x, y):
            return x + y

        def get_weights(self):
            return self.weights

        def set_weights(self, weights):
            if not isinstance(weights, int):
                raise TypeError(f"Scalar takes an int, got {weights!r}")
            self.weights = weights

    return Scalar


def _many_models():
    scalar, algorithm_base = _scalar_model(), _bases()[1]

    class Many(algorithm_base):
        def __init__(self) -> None:
            self.model1 = scalar(1)
            self.model_list1 = (-1, scalar(3))
            self.model_list2 = [scalar(4), scalar(5)]
            self.model_dict1 = {"k1": scalar(6), "k2": -2}
            self.not_a_model = 7

    return Many()


def test_model_base_calls_forward_and_counts_both_backends_models() -> None:
    model_base, scalar = _bases()[0], _scalar_model()
    assert scalar(0)(10, 20) == 30
    assert isinstance(Forward(), model_base)  # paddle's parl.Model, as in PARL 2.x
    assert not isinstance(object(), model_base)  # (torch's: parl-core/tests/torch/test_core.py)


def test_algorithm_base_weights_cover_every_model_attribute() -> None:
    alg = _many_models()
    expected = {"model1": 1, "model_list1": [3], "model_list2": [4, 5], "model_dict1": {"k1": 6}}
    assert alg.get_weights() == expected
    negated = {
        "model1": -1,
        "model_list1": [-3],
        "model_list2": [-4, -5],
        "model_dict1": {"k1": -6},
    }
    alg.set_weights(negated)
    other = _many_models()
    other.set_weights(alg.get_weights())
    assert other.get_weights() == negated


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda w: {"model0": w.pop("model1"), **w},
            r"missing \['model1'\], unexpected \['model0'\]",
        ),
        (
            lambda w: {**w, "model_list2": [-4]},
            "'model_list2' holds 2 models, but its weights are 1",
        ),
        (
            lambda w: {**w, "model_dict1": {"k2": 0}},
            r"holds the models \['k1'\], but its weights are for \['k2'\]",
        ),
    ],
)
def test_algorithm_base_refuses_weights_of_another_layout_and_changes_nothing(
    change, match
) -> None:
    from parl.core.errors import WeightsMismatchError

    alg = _many_models()
    before = alg.get_weights()
    with pytest.raises(WeightsMismatchError, match=match):
        alg.set_weights(change({k: v for k, v in before.items()}))
    assert alg.get_weights() == before


def test_algorithm_base_puts_back_the_models_loaded_before_one_that_refuses() -> None:
    alg = _many_models()
    before = alg.get_weights()
    with pytest.raises(TypeError, match="Scalar takes an int"):
        alg.set_weights({**before, "model1": -1, "model_dict1": {"k1": "six"}})
    assert alg.get_weights() == before


def test_algorithm_base_over_real_models() -> None:
    algorithm_base = _bases()[1]

    class Twin(algorithm_base):
        def __init__(self) -> None:
            self.policies = [Forward(), Forward()]

    weights = Twin().get_weights()
    assert sorted(weights) == ["policies"] and sorted(weights["policies"][0]) == [
        "fc.bias",
        "fc.weight",
    ]


def test_agent_base_passes_weights_to_its_algorithm() -> None:
    agent_base = _bases()[2]
    agent, other = agent_base(_many_models()), agent_base(_many_models())
    weights = {
        "model1": -1,
        "model_list1": [-3],
        "model_list2": [-4, -5],
        "model_dict1": {"k1": -6},
    }
    agent.set_weights(weights)
    other.set_weights(agent.get_weights())
    assert other.get_weights() == weights
    with pytest.raises(NotImplementedError, match="does not implement learn"):
        agent.learn()


def test_impala_vtrace_keeps_its_parl_2_path() -> None:
    pytest.importorskip("parl_algos_impala")
    from parl.algorithms.paddle.impala import vtrace

    import parl_algos_impala.vtrace as ours

    assert vtrace.from_importance_weights is ours.from_importance_weights
    assert vtrace.VTraceReturns is ours.VTraceReturns


def test_every_algorithm_is_a_parl2_algorithm_base() -> None:
    """Paddle's, torch's and the written-once algorithms all subclass PARL 2.x's AlgorithmBase."""
    from parl.core.algorithm_base import AlgorithmBase
    from parl.core.neutral import Algorithm as WrittenOnce
    from parl.core.paddle.algorithm import Algorithm as PaddleAlgorithm

    assert issubclass(PaddleAlgorithm, AlgorithmBase) and issubclass(WrittenOnce, AlgorithmBase)
    assert issubclass(parl.algorithms.get("DQN"), AlgorithmBase)
