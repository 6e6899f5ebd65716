"""IMPALA: the loss against numpy, PARL's API, bad input, and the contract test suite, on paddle
and on torch (one class for both)."""

from __future__ import annotations

from pathlib import Path

import parl
from parl.core.errors import ModelContractError
from parl.core.neutral import Agent, Model
from parl.core.ops import ops_of_backend
from parl.testing import AlgorithmContract, BadInput, IdentityEnv

import numpy as np
import pydantic
import pytest

from parl_algos_impala import IMPALA, IMPALAConfig, MLPModel, VTraceLoss

from .test_vtrace import numpy, reference_vtrace

FIXTURES = Path(__file__).parent / "fixtures"


class LinearActorCritic(Model):
    """Linear logits and a linear value: small enough to write the loss in numpy."""

    def __init__(self, obs_dim: int, n_actions: int, *, backend: str | None = None) -> None:
        super().__init__()
        self.pi = self.nn.Linear(obs_dim, n_actions)
        self.v = self.nn.Linear(obs_dim, 1)

    def policy(self, obs):
        return self.pi(obs)

    def value(self, obs):
        return self.v(obs)  # [B, 1]: IMPALA squeezes it


class NumpyAgent(Agent):
    """Samples actions from ``probs`` with its own generator; numpy in and out."""

    def __init__(self, algorithm: IMPALA, seed: int = 0) -> None:
        super().__init__(algorithm)
        self.rng = np.random.default_rng(seed)

    def sample(self, obs):
        probs, logits = self.alg.sample(self.to_tensor(obs))
        probs = self.to_numpy(probs).reshape(-1, probs.shape[-1])
        actions = (self.rng.uniform(size=(len(probs), 1)) > probs.cumsum(-1)).sum(-1)
        actions = np.minimum(actions, probs.shape[-1] - 1)
        return (actions if np.ndim(obs) > 1 else actions[0]), self.to_numpy(logits)

    def predict(self, obs):
        return self.to_numpy(self.alg.predict(self.to_tensor(obs)))

    def learn(self, obs, actions, logits, rewards, dones, **kwargs):
        loss, kl = self.alg.learn(obs, actions, logits, rewards, dones, **kwargs)
        return [float(loss.total_loss), float(kl)]


def _log_softmax(x):
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def paddle_layout_weights(model) -> dict[str, np.ndarray]:
    """The model's weights with every Linear weight ``[in, out]`` (paddle's layout)."""
    weights = model.get_weights()
    if model.backend_name == "torch":
        from parl.core.torch.interop import to_paddle_weights

        weights = to_paddle_weights(model)
    return weights


def set_paddle_layout_weights(model, weights: dict[str, np.ndarray]) -> None:
    if model.backend_name == "torch":
        from parl.core.torch.interop import from_paddle_weights

        weights = from_paddle_weights(model, weights)
    model.set_weights(weights)


def test_loss_matches_a_hand_computation(backend):
    rng = np.random.default_rng(0)
    steps, trajectories, obs_dim, n = 4, 3, 3, 2
    rows = steps * trajectories
    model = LinearActorCritic(obs_dim, n, backend=backend)
    w, b = rng.normal(size=(obs_dim, n)).astype("float32"), np.float32([0.1, -0.2])
    vw, vb = rng.normal(size=(obs_dim, 1)).astype("float32"), np.float32([0.3])
    set_paddle_layout_weights(model, {"pi.weight": w, "pi.bias": b, "v.weight": vw, "v.bias": vb})
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
    assert not np.allclose(paddle_layout_weights(model)["pi.weight"], w), "no step was taken"


def test_float_dones_equal_bool_dones(backend):
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(10, 3)).astype("float32")
    actions, logits = rng.integers(0, 2, 10), rng.normal(size=(10, 2)).astype("float32")
    rewards, dones = rng.normal(size=10).astype("float32"), rng.uniform(size=10) < 0.5
    losses = []
    for as_given in (dones, dones.astype("float32")):
        parl.set_seed(0, backend=backend)
        alg = IMPALA(LinearActorCritic(3, 2, backend=backend), sample_batch_steps=5)
        loss, _ = alg.learn(obs, actions, logits, rewards, as_given)
        losses.append(float(loss.total_loss))
    assert losses[0] == losses[1]


def test_sample_and_predict_follow_parl(backend):
    alg = IMPALA(LinearActorCritic(4, 3, backend=backend))
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
    probs, logits = alg.sample(obs)
    assert list(probs.shape) == [5, 3] and list(logits.shape) == [5, 3]
    np.testing.assert_allclose(numpy(probs).sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(numpy(alg.predict(obs)), numpy(logits).argmax(-1))
    assert list(alg.predict(obs[0]).shape) == []
    assert list(alg.value(obs).shape) == [5]


def test_learning_rate_is_kept(backend):
    alg = IMPALA(LinearActorCritic(2, 2, backend=backend), sample_batch_steps=2)
    lr = ops_of_backend(backend).get_lr
    batch = (np.ones((2, 2)), np.zeros(2, dtype=np.int64), np.zeros((2, 2)), np.ones(2))
    alg.learn(*batch, np.zeros(2), learning_rate=0.05)
    assert lr(alg.optimizer) == 0.05
    alg.learn(*batch, np.zeros(2))
    assert lr(alg.optimizer) == 0.05
    with pytest.raises(ValueError, match="learning_rate must be a positive number"):
        alg.learn(*batch, np.zeros(2), learning_rate=-1.0)


@pytest.mark.torch
def test_device_moves_the_model_and_paddle_refuses_a_gpu():
    alg = IMPALA(LinearActorCritic(2, 2, backend="torch"), sample_batch_steps=2, device="cpu")
    assert str(alg.device) == "cpu"
    assert all(str(p.device) == "cpu" for p in alg.model.parameters())
    with pytest.raises(ValueError, match="paddle backend takes no device argument"):
        IMPALA(LinearActorCritic(2, 2, backend="paddle"), sample_batch_steps=2, device="cuda")


def _fixture_agent(backend: str) -> Agent:
    return Agent(IMPALA(MLPModel(4, 3, hidden_size=8, backend=backend), 4, initial_lr=0.01))


def test_loads_a_checkpoint_and_weights_of_the_previous_version():
    # Written by the paddle-only IMPALA before it was written once for both frameworks.
    expected = np.load(FIXTURES / "impala_paddle_expected.npz")
    for load in ("load_checkpoint", "restore"):
        agent = _fixture_agent("paddle")
        suffix = "ckpt" if load == "load_checkpoint" else "weights"
        getattr(agent, load)(FIXTURES / f"impala_paddle.{suffix}")
        _, logits = agent.alg.sample(expected["probe"])
        np.testing.assert_allclose(numpy(logits), expected["logits"], rtol=1e-6)
        values = agent.alg.value(expected["probe"])
        np.testing.assert_allclose(numpy(values), expected["values"], rtol=1e-6)


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
    assert parl.algorithms.get("IMPALA", backend="paddle") is IMPALA
    assert parl.algorithms.get("IMPALA", backend="torch") is IMPALA


STEPS, ENVS = 5, 8


class TestIMPALAContract(AlgorithmContract):
    algorithm_name = "IMPALA"
    backends = ("paddle", "torch")
    solved_score = 0.95
    train_steps = 60
    short_train_steps = 8

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        model = LinearActorCritic(4, 4, backend=self.backend)
        alg = self.algorithm_class(model, STEPS, **{"initial_lr": 0.05, **config})
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


@pytest.mark.torch
def test_atari_model_computes_the_same_on_both_frameworks():
    from parl.core.torch.interop import from_paddle_weights

    from parl_algos_impala import AtariModel

    models = {name: AtariModel(6, backend=name) for name in ("paddle", "torch")}
    models["torch"].set_weights(
        from_paddle_weights(models["torch"], models["paddle"].get_weights())
    )
    frames = np.random.default_rng(0).integers(0, 255, (2, 4, 42, 42)).astype(np.float32)
    outputs = {}
    for name, model in models.items():
        obs = ops_of_backend(name).to_tensor(frames)
        outputs[name] = [numpy(model.policy(obs)), numpy(model.value(obs))]
    for first, second in zip(outputs["paddle"], outputs["torch"], strict=True):
        np.testing.assert_allclose(first, second, rtol=1e-4, atol=1e-5)
