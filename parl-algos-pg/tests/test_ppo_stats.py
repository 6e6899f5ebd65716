"""PPO's diagnostics (approx_kl, clip_fraction, explained_variance) and its target_kl early stop,
on CartPole rollouts with the shipped agent and model, checked against numpy by hand."""

from __future__ import annotations

import parl
from parl.utils import RolloutCollector, compute_gae, make_vector_env

import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_pg import PPO, DiscretePPOModel, PPOAgent

SEED = 3


def _rollout(agent: PPOAgent) -> dict[str, np.ndarray]:
    """64 steps of 2 CartPole envs with the agent's policy, flattened, GAE advantages."""
    collector = RolloutCollector(make_vector_env("CartPole-v1", 2), seed=SEED)

    def act(obs):
        value, action, logp = agent.sample(obs)
        return action, {"value": value, "logp": logp}

    rollout = collector.rollout(act, 32)
    values = rollout.extras["value"]
    adv, returns = compute_gae(
        rollout.rewards,
        values,
        rollout.dones,
        agent.value(rollout.next_obs),
        rollout.next_dones,
        0.99,
        0.95,
    )
    collector.envs.close()
    return {
        "obs": rollout.flatten(rollout.obs),
        "action": rollout.flatten(rollout.actions),
        "value": values.reshape(-1),
        "returns": returns.reshape(-1),
        "logp": rollout.extras["logp"].reshape(-1),
        "adv": adv.reshape(-1),
    }


def _agent(**config) -> PPOAgent:
    parl.set_seed(SEED)
    return PPOAgent(PPO(DiscretePPOModel(4, 2, hidden_size=16), **config), seed=SEED)


def _learn(agent: PPOAgent, data: dict[str, np.ndarray], epochs: int, logp=None):
    logp = data["logp"] if logp is None else logp
    return agent.learn(
        data["obs"], data["action"], data["value"], data["returns"], logp, data["adv"],
        epochs, 1, None,
    )  # fmt: skip


def test_stats_match_a_numpy_hand_check_on_a_cartpole_rollout():
    agent = _agent(clip_param=0.2)
    data = _rollout(agent)
    # Old log-probs shifted by up to ±0.5 so that some ratios leave [0.8, 1.2].
    shift = np.random.default_rng(0).uniform(-0.5, 0.5, size=data["logp"].shape)
    old_logp = (data["logp"] + shift).astype(np.float32)
    logits = agent.alg.model.policy(paddle.to_tensor(data["obs"])).numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    log_ratio = log_probs[np.arange(len(logits)), data["action"]] - old_logp
    ratio = np.exp(log_ratio)
    residual = data["returns"] - data["value"]

    stats = _learn(agent, data, epochs=1, logp=old_logp)

    assert stats.approx_kl == pytest.approx(np.mean((ratio - 1) - log_ratio), rel=1e-4)
    assert stats.approx_kl > 0
    expected_fraction = np.mean(np.abs(ratio - 1) > 0.2)
    assert 0 < expected_fraction < 1
    assert stats.clip_fraction == pytest.approx(expected_fraction)
    expected_ev = 1 - residual.var() / data["returns"].var()
    assert stats.explained_variance == pytest.approx(expected_ev, rel=1e-4, abs=1e-5)
    assert stats.epochs == 1


def test_explained_variance_is_one_for_exact_values_and_nan_for_constant_returns():
    agent = _agent()
    data = _rollout(agent)
    exact = dict(data, value=data["returns"])
    assert _learn(agent, exact, epochs=1).explained_variance == pytest.approx(1.0)
    constant = dict(data, returns=np.full_like(data["returns"], 2.0))
    assert np.isnan(_learn(agent, constant, epochs=1).explained_variance)


def test_target_kl_stops_after_the_first_epoch_whose_mean_kl_exceeds_it():
    target_kl = 0.002
    stopped, free = _agent(initial_lr=0.01, target_kl=target_kl), _agent(initial_lr=0.01)
    free.alg.model.set_weights(stopped.alg.model.get_weights())
    data = _rollout(stopped)

    # The same updates one epoch at a time, without the stop: the KL of each epoch.
    kls = [_learn(free, data, epochs=1).approx_kl for _ in range(10)]
    expected = next(i + 1 for i, kl in enumerate(kls) if kl > target_kl)
    assert expected < 10

    stats = _learn(stopped, data, epochs=10)
    assert stats.epochs == expected
    assert _agent(initial_lr=0.01).learn(*data.values(), 10, 1, None).epochs == 10


@pytest.mark.parametrize("bad", [0.0, -0.1, "high"])
def test_target_kl_must_be_a_positive_number(bad):
    with pytest.raises(pydantic.ValidationError, match="target_kl"):
        PPO(DiscretePPOModel(4, 2), target_kl=bad)
