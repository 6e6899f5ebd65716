"""MLPPolicy: tanh hidden layers, then a linear output, against numpy."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from parl_algos_es import MLPPolicy


def test_mlp_policy_is_tanh_layers_then_a_linear_output() -> None:
    policy = MLPPolicy(3, 2, hidden_sizes=(5, 4))
    weights = policy.get_weights()
    obs = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    hidden = np.tanh(obs @ weights["layers.0.weight"] + weights["layers.0.bias"])
    hidden = np.tanh(hidden @ weights["layers.1.weight"] + weights["layers.1.bias"])
    expected = hidden @ weights["layers.2.weight"] + weights["layers.2.bias"]
    np.testing.assert_allclose(policy(paddle.to_tensor(obs)).numpy(), expected, rtol=1e-5)


def test_mlp_policy_without_hidden_layers_is_linear_and_refuses_empty_layers() -> None:
    assert sorted(MLPPolicy(4, 2, hidden_sizes=()).get_weights()) == [
        "layers.0.bias",
        "layers.0.weight",
    ]
    with pytest.raises(ValueError, match=r"layer sizes must be >= 1, got \[4, 0, 2\]"):
        MLPPolicy(4, 2, hidden_sizes=(0,))
