"""The torch distributions against the paddle ones and torch.distributions, on the same numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parl.core import distributions as pd  # noqa: E402
from parl.core.torch import distributions as td  # noqa: E402

import paddle  # noqa: E402

RNG = np.random.default_rng(3)
LOGITS = RNG.normal(size=(5, 4)).astype(np.float32)
OTHER_LOGITS = RNG.normal(size=(5, 4)).astype(np.float32)
MEAN = RNG.normal(size=(5, 3)).astype(np.float32)
STD = np.exp(RNG.normal(scale=0.5, size=(1, 3))).astype(np.float32)
OTHER_MEAN = RNG.normal(size=(5, 3)).astype(np.float32)
ACTIONS = RNG.integers(0, 4, size=5)
SQUASHED = np.tanh(RNG.normal(size=(5, 3))).astype(np.float32)


def both(cls: str, *arrays: np.ndarray):
    return (
        getattr(pd, cls)(*(paddle.to_tensor(a) for a in arrays)),
        getattr(td, cls)(*(torch.from_numpy(a) for a in arrays)),
    )


def close(paddle_value, torch_value) -> None:
    np.testing.assert_allclose(paddle_value.numpy(), torch_value.numpy(), rtol=1e-5, atol=1e-6)


def test_categorical_matches_paddle_and_torch_distributions() -> None:
    p, t = both("Categorical", LOGITS)
    p2, t2 = both("Categorical", OTHER_LOGITS)
    close(p.log_prob(paddle.to_tensor(ACTIONS)), t.log_prob(torch.from_numpy(ACTIONS)))
    close(p.entropy(), t.entropy())
    close(p.kl(p2), t.kl(t2))
    assert t.mode().tolist() == p.mode().tolist()
    reference = torch.distributions.Categorical(logits=torch.from_numpy(LOGITS))
    torch.testing.assert_close(t.entropy(), reference.entropy())
    assert t.sample().shape == (5,) and t.sample().dtype == torch.int64


def test_diag_gaussian_matches_paddle_and_torch_distributions() -> None:
    p, t = both("DiagGaussian", MEAN, STD)
    p2, t2 = both("DiagGaussian", OTHER_MEAN, STD)
    close(p.log_prob(paddle.to_tensor(OTHER_MEAN)), t.log_prob(torch.from_numpy(OTHER_MEAN)))
    close(p.entropy(), t.entropy())
    close(p.kl(p2), t.kl(t2))
    reference = torch.distributions.Normal(torch.from_numpy(MEAN), torch.from_numpy(STD))
    torch.testing.assert_close(
        t.log_prob(torch.from_numpy(OTHER_MEAN)),
        reference.log_prob(torch.from_numpy(OTHER_MEAN)).sum(-1),
    )
    assert t.batch_shape == p.batch_shape == [5]


def test_tanh_gaussian_matches_paddle_and_gradients_flow() -> None:
    p, t = both("TanhGaussian", MEAN, STD)
    close(p.log_prob(paddle.to_tensor(SQUASHED)), t.log_prob(torch.from_numpy(SQUASHED)))
    close(p.mode(), t.mode())
    mean = torch.from_numpy(MEAN).requires_grad_()
    action, log_prob = td.TanhGaussian(mean, torch.from_numpy(STD)).rsample_with_log_prob()
    assert action.abs().max() < 1 and log_prob.shape == (5,)
    (action.sum() + log_prob.sum()).backward()
    assert mean.grad is not None and bool(mean.grad.abs().sum() > 0)


def test_gumbel_softmax_rsample_is_a_point_of_the_simplex() -> None:
    dist = td.GumbelSoftmax(torch.from_numpy(LOGITS), temperature=0.5)
    relaxed = dist.rsample()
    torch.testing.assert_close(relaxed.sum(-1), torch.ones(5))
    assert dist.mode().sum(-1).tolist() == [1.0] * 5


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (
            lambda: td.DiagGaussian(torch.zeros(4, 1), torch.ones(3)),
            ValueError,
            "does not broadcast",
        ),
        (
            lambda: td.Categorical(torch.zeros(3, 2)).log_prob(torch.zeros(4)),
            ValueError,
            "batch shape",
        ),
        (lambda: td.GumbelSoftmax(torch.zeros(2), temperature=0.0), ValueError, "temperature > 0"),
        (
            lambda: td.TanhGaussian(torch.zeros(2), torch.ones(2)).entropy(),
            NotImplementedError,
            "closed form",
        ),
        (
            lambda: td.Categorical(torch.zeros(2)).rsample(),
            NotImplementedError,
            "no reparameterised",
        ),
        (
            lambda: td.Categorical(torch.zeros(2)).kl(
                td.DiagGaussian(torch.zeros(2), torch.ones(2))
            ),
            TypeError,
            "needs another Categorical",
        ),
    ],
)
def test_bad_input_is_refused_in_the_paddle_classes_words(make, error, match) -> None:
    with pytest.raises(error, match=match):
        make()


# -- PARL 2.x's parl.core.torch.policy_distribution ---------------------------------------------


def test_parl_2_torch_policy_distribution_names_over_ours() -> None:
    from parl.core.torch import policy_distribution as ppd
    from parl.core.torch.distributions import Categorical, DiagGaussian

    torch.manual_seed(0)
    logits = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    dist = ppd.CategoricalDistribution(logits)
    actions = torch.tensor([2, 1])
    torch.testing.assert_close(dist.logp(actions), Categorical(logits).log_prob(actions))
    assert dist.sample().shape == (2,) and isinstance(dist, ppd.PolicyDistribution)
    mean = torch.zeros(2, 2, requires_grad=True)
    logstd = torch.full((2, 2), math.log(2.0), requires_grad=True)
    gaussian = ppd.DiagGaussianDistribution((mean, logstd))
    torch.testing.assert_close(gaussian.std, torch.full((2, 2), 2.0))
    torch.testing.assert_close(gaussian.logp(mean), DiagGaussian(mean, logstd.exp()).log_prob(mean))
    gaussian.sample().sum().backward()  # PARL's sample is reparameterised
    assert mean.grad is not None and logstd.grad is not None


def test_parl_2_soft_categoricals_are_differentiable_relaxations() -> None:
    from parl.core.torch import policy_distribution as ppd

    torch.manual_seed(0)
    logits = torch.tensor([[5.0, 0.0, 0.0], [0.0, 0.0, 0.0]], requires_grad=True)
    sample = ppd.SoftCategoricalDistribution(logits).sample()
    torch.testing.assert_close(sample.sum(-1), torch.ones(2))
    sample[:, 0].sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0
    multi = ppd.SoftMultiCategoricalDistribution(
        torch.tensor([[9.0, 0.0, 0.0, 9.0, 0.0]]), low=[0, 1], high=[1, 3]
    )
    assert multi.sample().shape == (1, 5) and multi.mode().tolist() == [[0, 2]]
    torch.testing.assert_close(multi.kl(multi), torch.zeros(1))
    with pytest.raises(ValueError, match="2-D"):
        ppd.CategoricalDistribution(torch.zeros(2, 1, 3))
    with pytest.raises(TypeError, match="mean, logstd"):
        ppd.DiagGaussianDistribution(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="side by side"):
        ppd.SoftMultiCategoricalDistribution(torch.zeros(1, 4), [0, 0], [1, 2])
