"""IMPALA: the loss against numpy, PARL's API, bad input, and the contract test suite."""

from __future__ import annotations

import parl
from parl.core.errors import ModelContractError
from parl.testing import AlgorithmContract, BadInput, IdentityEnv

import numpy as np
import paddle
import pydantic
import pytest

from parl_algos_impala import IMPALA, IMPALAConfig, VTraceLoss

from .test_vtrace import reference_vtrace


class LinearActorCritic(parl.Model):
    """Linear logits and a linear value: small enough to write the loss in numpy."""

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.pi = paddle.nn.Linear(obs_dim, n_actions)
        self.v = paddle.nn.Linear(obs_dim, 1)

    def policy(self, obs):
        return self.pi(obs)

    def value(self, obs):
        return self.v(obs)  # [B, 1]: IMPALA squeezes it


class NumpyAgent(parl.Agent):
    """Samples actions from ``probs`` with its own generator; numpy in and out."""

    def __init__(self, algorithm: IMPALA, seed: int = 0) -> None:
        super().__init__(algorithm)
        self.rng = np.random.default_rng(seed)

    def sample(self, obs):
        probs, logits = self.alg.sample(np.asarray(obs, dtype=np.float32))
        probs = probs.numpy().reshape(-1, probs.shape[-1])
        actions = (self.rng.uniform(size=(len(probs), 1)) > probs.cumsum(-1)).sum(-1)
        actions = np.minimum(actions, probs.shape[-1] - 1)
        return (actions if np.ndim(obs) > 1 else actions[0]), logits.numpy()

    def predict(self, obs):
        return self.alg.predict(np.asarray(obs, dtype=np.float32)).numpy()

    def learn(self, obs, actions, logits, rewards, dones, **kwargs):
        loss, kl = self.alg.learn(obs, actions, logits, rewards, dones, **kwargs)
        return [float(loss.total_loss), float(kl)]


def _log_softmax(x):
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_loss_matches_a_hand_computation():
    rng = np.random.default_rng(0)
    steps, trajectories, obs_dim, n = 4, 3, 3, 2
    rows = steps * trajectories
    model = LinearActorCritic(obs_dim, n)
    w, b = rng.normal(size=(obs_dim, n)).astype("float32"), np.float32([0.1, -0.2])
    vw, vb = rng.normal(size=(obs_dim, 1)).astype("float32"), np.float32([0.3])
    model.set_weights({"pi.weight": w, "pi.bias": b, "v.weight": vw, "v.bias": vb})
    alg = IMPALA(model, steps, 0.9, 0.5, 1.0, 1.0)
    obs = rng.normal(size=(rows, obs_dim)).astype("float32")
    actions = rng.integers(0, n, rows)
    behaviour_logits = rng.normal(size=(rows, n)).astype("float32")
    rewards = rng.normal(size=rows).astype("float32")
    dones = rng.uniform(size=rows) < 0.3

    logp = _log_softmax(obs @ w + b)
    blogp = _log_softmax(behaviour_logits)
    take = np.arange(rows), actions
    values = (obs @ vw + vb)[:, 0]

    def tb(x):  # row b*T + t -> [t, b]
        return x.reshape(trajectories, steps).T

    target_logp, behaviour_logp = tb(logp[take]), tb(blogp[take])
    vs, pg = reference_vtrace(
        behaviour_logp[:-1],
        target_logp[:-1],
        0.9 * (1 - tb(dones.astype(float)))[:-1],
        tb(rewards)[:-1],
        tb(values)[:-1],
        tb(values)[-1],
        1.0,
        1.0,
    )
    entropy = -(np.exp(logp) * logp).sum(-1)
    pi_loss = -(target_logp[:-1] * pg).sum()
    vf_loss = 0.5 * ((tb(values)[:-1] - vs) ** 2).sum()
    entropy_sum = tb(entropy)[:-1].sum()
    kl = (np.exp(logp) * (logp - blogp)).sum(-1).mean()

    loss, got_kl = alg.learn(obs, actions, behaviour_logits, rewards, dones, 1e-3, -0.01)
    assert isinstance(loss, VTraceLoss)
    assert float(loss.pi_loss) == pytest.approx(pi_loss, rel=1e-4)
    assert float(loss.vf_loss) == pytest.approx(vf_loss, rel=1e-4)
    assert float(loss.entropy) == pytest.approx(entropy_sum, rel=1e-4)
    expected_total = pi_loss + 0.5 * vf_loss - 0.01 * entropy_sum
    assert float(loss.total_loss) == pytest.approx(expected_total, rel=1e-4)
    assert float(got_kl) == pytest.approx(kl, rel=1e-4)
    assert not np.allclose(model.get_weights()["pi.weight"], w), "no gradient step was taken"


def test_float_dones_equal_bool_dones():
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(10, 3)).astype("float32")
    actions, logits = rng.integers(0, 2, 10), rng.normal(size=(10, 2)).astype("float32")
    rewards, dones = rng.normal(size=10).astype("float32"), rng.uniform(size=10) < 0.5
    losses = []
    for as_given in (dones, dones.astype("float32")):
        parl.set_seed(0)
        alg = IMPALA(LinearActorCritic(3, 2), sample_batch_steps=5)
        loss, _ = alg.learn(obs, actions, logits, rewards, as_given)
        losses.append(float(loss.total_loss))
    assert losses[0] == losses[1]


def test_sample_and_predict_follow_parl():
    alg = IMPALA(LinearActorCritic(4, 3))
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
    probs, logits = alg.sample(obs)
    assert probs.shape == [5, 3] and logits.shape == [5, 3]
    np.testing.assert_allclose(probs.numpy().sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(alg.predict(obs).numpy(), logits.numpy().argmax(-1))
    assert alg.predict(obs[0]).shape == []
    assert alg.value(obs).shape == [5]


def test_learning_rate_is_kept():
    alg = IMPALA(LinearActorCritic(2, 2), sample_batch_steps=2)
    batch = (np.ones((2, 2)), np.zeros(2, dtype=np.int64), np.zeros((2, 2)), np.ones(2))
    alg.learn(*batch, np.zeros(2), learning_rate=0.05)
    assert alg.optimizer.get_lr() == 0.05
    alg.learn(*batch, np.zeros(2))
    assert alg.optimizer.get_lr() == 0.05
    with pytest.raises(ValueError, match="learning_rate must be a positive number"):
        alg.learn(*batch, np.zeros(2), learning_rate=-1.0)


def test_positional_parl_signature_and_none_thresholds():
    alg = IMPALA(LinearActorCritic(2, 2), 20, 0.95, 0.25, None, None)
    cfg = alg.config
    assert (cfg.sample_batch_steps, cfg.gamma, cfg.vf_loss_coeff) == (20, 0.95, 0.25)
    assert cfg.clip_rho_threshold is None and cfg.clip_pg_rho_threshold is None
    assert alg.sample_batch_steps == 20
    default = IMPALA(LinearActorCritic(2, 2), config=IMPALAConfig(gamma=0.5))
    assert default.config.clip_rho_threshold == 1.0 and default.config.gamma == 0.5


def test_model_without_value_is_refused():
    class PolicyOnly(parl.Model):
        def policy(self, obs):
            return obs

    with pytest.raises(ModelContractError, match="value"):
        IMPALA(PolicyOnly())


def test_registry_lookup():
    assert parl.algorithms.get("IMPALA") is IMPALA


STEPS, ENVS = 5, 8


class TestIMPALAContract(AlgorithmContract):
    algorithm_class = IMPALA
    solved_score = 0.95
    train_steps = 60
    short_train_steps = 8

    def make_agent(self, seed, **config):
        parl.set_seed(seed)
        alg = IMPALA(LinearActorCritic(4, 4), STEPS, **{"initial_lr": 0.05, **config})
        return NumpyAgent(alg, seed)

    def explore(self, agent, obs):
        return agent.sample(obs)[0]

    def train(self, agent, env, steps, seed):
        envs = [IdentityEnv(4, episode_length=10) for _ in range(ENVS)]
        obs = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(envs)])
        for _ in range(steps):
            batch = {k: [] for k in ("obs", "actions", "logits", "rewards", "dones")}
            for _ in range(STEPS):
                actions, logits = agent.sample(obs)
                results = [e.step(a) for e, a in zip(envs, actions, strict=True)]
                next_obs = np.stack(
                    [e.reset()[0] if r[2] else r[0] for e, r in zip(envs, results, strict=True)]
                )
                for key, value in zip(
                    batch,
                    (obs, actions, logits, [r[1] for r in results], [r[2] for r in results]),
                    strict=True,
                ):
                    batch[key].append(np.asarray(value))
                obs = next_obs
            # [T, N, ...] -> [N*T, ...], trajectory after trajectory
            rows = STEPS * ENVS
            flat = [np.swapaxes(np.stack(v), 0, 1).reshape(rows, -1) for v in batch.values()]
            agent.learn(flat[0], flat[1][:, 0], flat[2], flat[3][:, 0], flat[4][:, 0])

    def learn_batch(self, agent, rng):
        rows = STEPS * 4
        obs = np.eye(4, dtype=np.float32)[rng.integers(0, 4, rows)]
        actions = rng.integers(0, 4, rows)
        logits = rng.normal(size=(rows, 4)).astype(np.float32)
        rewards = (actions == obs.argmax(1)).astype(np.float32)
        return agent.learn(obs, actions, logits, rewards, rng.uniform(size=rows) < 0.2)

    def bad_inputs(self, agent):
        rows = STEPS * 2
        obs, rewards = np.zeros((rows, 4), np.float32), np.zeros(rows, np.float32)
        actions, logits, dones = np.zeros(rows, np.int64), np.zeros((rows, 4)), np.zeros(rows)
        yield from (
            BadInput(
                "rows that are not whole trajectories",
                lambda: agent.learn(obs[:-1], actions[:-1], logits[:-1], rewards[:-1], dones[:-1]),
                ValueError,
                rf"got {rows - 1} steps, which is not a whole number of trajectories of "
                rf"sample_batch_steps={STEPS}",
            ),
            BadInput(
                "behaviour logits of the wrong width",
                lambda: agent.learn(obs, actions, logits[:, :3], rewards, dones),
                ValueError,
                rf"behaviour_logits has shape \[{rows}, 3\], expected \[{rows}, 4\]",
            ),
            BadInput(
                "too few rewards",
                lambda: agent.learn(obs, actions, logits, rewards[:-1], dones),
                ValueError,
                "rewards must have shape",
            ),
            BadInput(
                "an action out of range",
                lambda: agent.learn(obs, actions + 4, logits, rewards, dones),
                ValueError,
                r"in \[0, 4\)",
            ),
            BadInput(
                "float actions",
                lambda: agent.learn(obs, actions.astype(np.float32), logits, rewards, dones),
                TypeError,
                "must be integers",
            ),
            BadInput(
                "a trajectory of one step",
                lambda: IMPALA(agent.alg.model, sample_batch_steps=1),
                pydantic.ValidationError,
                "sample_batch_steps",
            ),
        )
