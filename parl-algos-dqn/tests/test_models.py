"""The dueling head and the ready-made Q-networks."""

from __future__ import annotations

import parl

import numpy as np
import paddle
import pytest

from parl_algos_dqn import DuelingHead, DuelingQNetwork, QNetwork


def test_dueling_head_advantages_average_to_zero() -> None:
    head = DuelingHead(hidden_dim=8, act_dim=5)
    features = paddle.randn([16, 8])
    q = head(features).numpy()
    value, advantage = (t.numpy() for t in head.value_and_advantage(features))
    np.testing.assert_allclose((q - value).mean(axis=1), 0.0, atol=1e-5)
    np.testing.assert_allclose(
        q, value + advantage - advantage.mean(axis=1, keepdims=True), rtol=1e-5
    )


@pytest.mark.parametrize("network", [QNetwork, DuelingQNetwork])
def test_networks_are_models_with_q_outputs(network) -> None:
    model = network(obs_dim=4, act_dim=3, hidden_sizes=(16, 8))
    assert isinstance(model, parl.Model)
    assert model(paddle.zeros([2, 4])).shape == [2, 3]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"obs_dim": 0, "act_dim": 2}, "obs_dim must be an integer > 0, got 0"),
        ({"obs_dim": 4, "act_dim": 2.0}, "act_dim must be an integer > 0, got 2.0"),
        ({"obs_dim": 4, "act_dim": 2, "hidden_sizes": ()}, "hidden_sizes"),
        ({"obs_dim": 4, "act_dim": 2, "hidden_sizes": (8, -1)}, r"hidden_sizes\[1\]"),
    ],
)
def test_bad_sizes_are_refused(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        DuelingQNetwork(**kwargs)
    with pytest.raises(ValueError, match="act_dim"):
        DuelingHead(8, 0)
