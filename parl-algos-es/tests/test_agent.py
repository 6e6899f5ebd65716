"""ESAgent: flat parameters, EvoKit's add_noise/update workflow, observation statistics and
solver files."""

from __future__ import annotations

import json

import parl
from parl.core.errors import CheckpointError
from parl.testing import LinearModel

import gymnasium as gym
import numpy as np
import paddle
import pytest

from parl_algos_es import CMAES, ES, GA, ESAgent, FlatParameters, SamplingRecord


def es_agent(seed=0, model=None, **options):
    parl.set_seed(seed)
    algorithm = ES(
        model or LinearModel(3, 2), seed=seed, noise_table_size=5_000, population_size=4, **options
    )
    return ESAgent(algorithm, gym.spaces.Discrete(2))


# -- flat parameters -------------------------------------------------------------------------


class TwoLayers(parl.Model):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = paddle.nn.Linear(3, 4)
        self.out = paddle.nn.Linear(4, 2)
        self.norm = paddle.nn.BatchNorm1D(2)  # buffers are not searched over
        self.out.bias.stop_gradient = True  # nor are frozen parameters

    def forward(self, obs):
        return self.norm(self.out(paddle.tanh(self.hidden(obs))))


def test_flat_parameters_round_trip_in_named_order():
    parl.set_seed(0)
    model = TwoLayers()
    flat = FlatParameters(model)
    names = [name for name, _ in flat.layout()]
    assert names == ["hidden.weight", "hidden.bias", "out.weight", "norm.weight", "norm.bias"]
    assert flat.size == 12 + 4 + 8 + 2 + 2
    weights = model.get_weights()
    expected = np.concatenate([weights[name].ravel() for name in names])
    np.testing.assert_array_equal(flat.get(), expected)
    vector = np.arange(flat.size, dtype=np.float32)
    flat.set(vector)
    np.testing.assert_array_equal(flat.get(), vector)
    np.testing.assert_array_equal(model.hidden.weight.numpy(), vector[:12].reshape(3, 4))
    np.testing.assert_array_equal(model.out.bias.numpy(), weights["out.bias"])


@pytest.mark.parametrize(
    ("vector", "match"),
    [
        (np.zeros(27), r"must have shape \(28,\), got \(27,\); it has 5 parameters"),
        (np.zeros((28, 1)), r"must have shape \(28,\), got \(28, 1\)"),
        (np.full(28, np.nan), "NaN or infinite"),
        (np.full(28, "x"), "must hold numbers"),
    ],
)
def test_flat_parameters_refuse_a_wrong_vector(vector, match):
    parl.set_seed(0)
    flat = FlatParameters(TwoLayers())
    before = flat.get()
    with pytest.raises(ValueError, match=match):
        flat.set(vector)
    np.testing.assert_array_equal(flat.get(), before)


# -- the sampling and update workflow --------------------------------------------------------


def test_add_noise_acts_with_the_candidate_and_leaves_the_model_alone():
    agent = es_agent()
    obs = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    centre, greedy = agent.alg.flat.get(), agent.predict(obs)
    plus, minus = agent.add_noise(), agent.add_noise()
    assert (plus.key, plus.sign, minus.key, minus.sign) == (plus.key, 1, plus.key, -1)
    np.testing.assert_array_equal(agent.alg.flat.get(), centre)
    logits = obs @ (agent.alg.candidate(minus)[:6].reshape(3, 2)) + agent.alg.candidate(minus)[6:]
    np.testing.assert_array_equal(agent.predict(obs), logits.argmax(1))
    agent.remove_noise()
    np.testing.assert_array_equal(agent.predict(obs), greedy)


def test_update_moves_the_solution_and_starts_a_new_generation():
    agent = es_agent()
    records = [agent.add_noise() for _ in range(4)]
    before = agent.alg.flat.get()
    stats = agent.update(records, [1.0, 0.0, 0.0, 1.0])
    assert agent.record is None and stats["reward_mean"] == 0.5
    assert not np.array_equal(agent.alg.flat.get(), before)
    assert agent.add_noise().key not in {r.key for r in records}


def test_records_survive_a_json_log():
    record = SamplingRecord(12, -1, 3)
    assert SamplingRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    with pytest.raises(ValueError, match="exactly the fields key, sign and generation"):
        SamplingRecord.from_dict({"key": 1, "sign": 1})
    with pytest.raises(ValueError, match=r"sign must be \+1 or -1"):
        SamplingRecord(1, 0)
    with pytest.raises(TypeError, match="key must be an integer"):
        SamplingRecord(1.5)  # type: ignore[arg-type]


def test_box_actions_are_clipped_to_the_space():
    parl.set_seed(0)
    space = gym.spaces.Box(-0.5, 0.5, (2,), np.float32)
    agent = ESAgent(ES(LinearModel(3, 2), noise_table_size=5_000), space)
    actions = agent.predict(np.full((5, 3), 100.0, np.float32))
    assert actions.shape == (5, 2) and actions.dtype == np.float32
    assert np.abs(actions).max() == pytest.approx(0.5)


def test_agent_bad_construction():
    parl.set_seed(0)
    es = ES(LinearModel(3, 2), noise_table_size=5_000)
    with pytest.raises(TypeError, match="ESAgent needs an ES, CMAES or GA algorithm"):
        ESAgent(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Discrete or Box space"):
        ESAgent(es, gym.spaces.MultiBinary(2))
    with pytest.raises(ValueError, match="normalize_observations needs observation_shape"):
        ESAgent(es, normalize_observations=True)


# -- observation statistics ------------------------------------------------------------------


def test_observations_are_counted_under_noise_and_merged_at_update():
    parl.set_seed(0)
    es = ES(LinearModel(3, 2), seed=0, noise_table_size=5_000, population_size=2)
    agent = ESAgent(es, observation_shape=(3,), normalize_observations=True)
    obs = np.random.default_rng(0).normal(5.0, 2.0, size=(50, 3)).astype(np.float32)
    agent.predict(obs)  # the unperturbed policy (evaluation) counts nothing
    records = [agent.add_noise()]
    agent.predict(obs[:20])
    records.append(agent.add_noise())
    agent.predict(obs[20:])
    assert agent.obs_count == 0, "statistics changed within a generation"
    agent.update(records, [1.0, 0.0])
    assert agent.obs_count == 50
    np.testing.assert_allclose(agent.obs_mean, obs.astype(np.float64).mean(0), rtol=1e-6)
    np.testing.assert_allclose(agent.obs_var, obs.astype(np.float64).var(0), rtol=1e-5)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("obs_mean", np.zeros(4), r"the observations' shape \(3,\)"),
        ("obs_var", np.zeros((1, 3)), r"the observations' shape \(3,\)"),
        ("obs_var", -np.ones(3), ">= 0"),
        ("obs_mean", [0.0, np.nan, 0.0], "finite"),
        ("obs_count", -1.0, "finite and >= 0"),
        ("obs_count", [1.0, 2.0], "a scalar"),
    ],
)
def test_observation_statistics_refuse_values_that_do_not_fit(name, value, message):
    es = ES(LinearModel(3, 2), seed=0, noise_table_size=5_000, population_size=2)
    agent = ESAgent(es, observation_shape=(3,), normalize_observations=True)
    before = (agent.obs_mean, agent.obs_var, agent.obs_count)
    with pytest.raises(ValueError, match=message):
        setattr(agent, name, value)
    np.testing.assert_array_equal(agent.obs_mean, before[0])
    np.testing.assert_array_equal(agent.obs_var, before[1])
    assert agent.obs_count == before[2]


def test_statistics_given_to_an_agent_that_does_not_normalise_are_refused():
    es = ES(LinearModel(3, 2), seed=0, noise_table_size=5_000, population_size=2)
    agent = ESAgent(es, observation_shape=(3,))
    for name, value in (("obs_mean", np.ones(3)), ("obs_var", np.ones(3)), ("obs_count", 5)):
        with pytest.raises(ValueError, match="does not normalise observations"):
            setattr(agent, name, value)
    agent.obs_mean, agent.obs_count = np.zeros(0), 0.0  # what its checkpoint holds


def test_observation_statistics_are_part_of_a_checkpoint(tmp_path):
    def agent(seed):
        parl.set_seed(seed)
        es = ES(LinearModel(3, 2), seed=seed, noise_table_size=5_000, population_size=2)
        return ESAgent(es, observation_shape=(3,), normalize_observations=True)

    first = agent(0)
    records = [first.add_noise(), first.add_noise()]
    first.predict(np.random.default_rng(0).normal(size=(10, 3)))
    first.update(records, [0.0, 1.0])
    first.save_checkpoint(tmp_path / "run.ckpt")
    second = agent(1)
    second.load_checkpoint(tmp_path / "run.ckpt")
    assert second.obs_count == 10
    np.testing.assert_array_equal(second.obs_mean, first.obs_mean)
    probe = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(second.predict(probe), first.predict(probe))


# -- solver files ----------------------------------------------------------------------------


def test_solver_file_is_safetensors_with_json_metadata(tmp_path):
    agent = es_agent()
    agent.update([agent.add_noise() for _ in range(4)], [1.0, 2.0, 3.0, 0.0])
    agent.save_solver(tmp_path / "es.solver")
    with (tmp_path / "es.solver").open("rb") as handle:
        header = json.loads(handle.read(int.from_bytes(handle.read(8), "little")))
    assert sorted(k for k in header if k != "__metadata__") == ["solver/m", "solver/v"]
    assert json.loads(header["__metadata__"]["parl"])["scalars"] == {"optimizer_steps": 1}
    assert oct((tmp_path / "es.solver").stat().st_mode & 0o777) == "0o600"


def _bad_solver_files(tmp_path):
    agent = es_agent()
    agent.save_solver(tmp_path / "es.solver")
    es_agent(model=LinearModel(3, 3)).save_solver(tmp_path / "other-model.solver")
    parl.set_seed(0)
    ESAgent(GA(LinearModel(3, 2), population_size=4, parents=2)).save_solver(tmp_path / "ga.solver")
    agent.save(tmp_path / "weights.model")
    truncated = (tmp_path / "es.solver").read_bytes()[:100]
    (tmp_path / "truncated.solver").write_bytes(truncated)
    paddle.save({"x": paddle.zeros([2])}, str(tmp_path / "pickle.solver"))
    return [
        ("other-model.solver", r"was saved for another model: .*\[3, 3\].* this agent's model"),
        ("ga.solver", "holds the state of a GA solver, not of this agent's ES"),
        ("weights.model", "is not a solver file"),
        ("truncated.solver", "truncated"),
        ("pickle.solver", "is a pickle"),
        ("missing.solver", "no weights or checkpoint file"),
    ]


def test_bad_solver_files_are_refused_and_change_nothing(tmp_path):
    cases = _bad_solver_files(tmp_path)
    agent = es_agent(seed=1)
    agent.update([agent.add_noise() for _ in range(4)], [1.0, 2.0, 3.0, 0.0])
    state, rng = agent.alg.solver_state(), agent.alg.rng.bit_generator.state
    for name, match in cases:
        with pytest.raises(CheckpointError, match=match):
            agent.load_solver(tmp_path / name)
        for key, value in agent.alg.solver_state()[0].items():
            np.testing.assert_array_equal(value, state[0][key])
        assert agent.alg.solver_state()[1] == state[1]
        assert agent.alg.rng.bit_generator.state == rng


def test_a_solver_of_another_optimizer_is_refused(tmp_path):
    es_agent(optimizer="momentum").save_solver(tmp_path / "momentum.solver")
    with pytest.raises(CheckpointError, match=r"solver arrays \['velocity'\] do not match"):
        es_agent().load_solver(tmp_path / "momentum.solver")


def test_cmaes_solver_of_another_population_is_refused(tmp_path):
    parl.set_seed(0)
    ESAgent(CMAES(LinearModel(3, 2), population_size=6)).save_solver(tmp_path / "cma.solver")
    parl.set_seed(0)
    agent = ESAgent(CMAES(LinearModel(3, 2), population_size=8))
    with pytest.raises(CheckpointError, match=r"solver array 'population' is float64 \(6, 8\)"):
        agent.load_solver(tmp_path / "cma.solver")


# -- observation statistics in solver files --------------------------------------------------


def normalising_agent(seed=0, shape=(3,)):
    parl.set_seed(seed)
    es = ES(LinearModel(shape[0], 2), seed=seed, noise_table_size=5_000, population_size=2)
    return ESAgent(es, observation_shape=shape, normalize_observations=True)


def trained_normalising_agent(seed=0):
    agent = normalising_agent(seed)
    records = [agent.add_noise(), agent.add_noise()]
    agent.predict(np.random.default_rng(seed).normal(3.0, 2.0, size=(10, 3)))
    agent.update(records, [0.0, 1.0])
    return agent


def test_solver_file_carries_the_observation_statistics(tmp_path):
    first = trained_normalising_agent()
    first.save_solver(tmp_path / "es.solver")
    first.save(tmp_path / "es.model")
    second = normalising_agent(seed=1)
    second.add_noise()
    second.predict(np.full((5, 3), 100.0))  # counted under noise: forgotten by the load
    second.load_solver(tmp_path / "es.solver")
    second.restore(tmp_path / "es.model")
    assert second.obs_count == first.obs_count == 10
    np.testing.assert_array_equal(second.obs_mean, first.obs_mean)
    np.testing.assert_array_equal(second.obs_var, first.obs_var)
    assert second.new_obs_stats.count == 0 and second.record is None
    probe = np.random.default_rng(1).normal(3.0, 2.0, size=(4, 3)).astype(np.float32)
    np.testing.assert_array_equal(second.predict(probe), first.predict(probe))
    for agent in (first, second):  # and the next generation is the same on both
        records = [agent.add_noise(), agent.add_noise()]
        agent.predict(probe)
        agent.update(records, [1.0, 0.0])
    np.testing.assert_array_equal(second.obs_mean, first.obs_mean)
    np.testing.assert_array_equal(second.alg.flat.get(), first.alg.flat.get())


def _rewritten(path, target, edit):
    """Copy a solver file to ``target`` with ``edit(tensors, metadata)`` applied."""
    from parl.core.tensor_files import read_tensor_file, write_tensor_file

    loaded = read_tensor_file(path)
    tensors, metadata = dict(loaded.tensors), dict(loaded.metadata)
    edit(tensors, metadata)
    write_tensor_file(target, tensors, metadata)


def test_solver_observation_statistics_must_fit_the_agent(tmp_path):
    trained_normalising_agent().save_solver(tmp_path / "normalising.solver")
    es_agent().save_solver(tmp_path / "plain.solver")
    good = tmp_path / "normalising.solver"
    _rewritten(
        good,
        tmp_path / "wide.solver",
        lambda t, m: t.update({f"observations/{k}": np.zeros(4) for k in ("mean", "var")}),
    )
    _rewritten(
        good,
        tmp_path / "negative-var.solver",
        lambda t, m: t.__setitem__("observations/var", -t["observations/var"]),
    )
    _rewritten(
        good,
        tmp_path / "nan-count.solver",
        lambda t, m: m.__setitem__("observations", {"count": float("nan")}),
    )
    _rewritten(good, tmp_path / "no-count.solver", lambda t, m: m.__setitem__("observations", None))
    _rewritten(
        good,
        tmp_path / "float32.solver",
        lambda t, m: t.__setitem__("observations/mean", t["observations/mean"].astype(np.float32)),
    )
    cases = [
        ("plain.solver", "holds no observation statistics but this agent normalises"),
        ("wide.solver", r"of shape \(3,\) and a count, got \{'mean': 'float64 \(4,\)'"),
        ("negative-var.solver", "var >= 0"),
        ("nan-count.solver", r"count must be a finite number >= 0 \(got nan\)"),
        ("no-count.solver", r"expected float64 mean and var of shape \(3,\) and a count"),
        ("float32.solver", r"got \{'mean': 'float32 \(3,\)'"),
    ]
    agent = trained_normalising_agent(seed=2)
    before = (agent.obs_mean, agent.obs_var, agent.obs_count, agent.alg.solver_state()[1])
    for name, match in cases:
        with pytest.raises(CheckpointError, match=match):
            agent.load_solver(tmp_path / name)
        np.testing.assert_array_equal(agent.obs_mean, before[0])
        np.testing.assert_array_equal(agent.obs_var, before[1])
        assert (agent.obs_count, agent.alg.solver_state()[1]) == before[2:]
    with pytest.raises(CheckpointError, match="this agent does not normalise observations"):
        es_agent().load_solver(good)
