"""CMA-ES against the cma library's own fmin, GA on a quadratic, and exact solver resumes."""

from __future__ import annotations

import itertools
import warnings

import parl
from parl.testing import LinearModel

import numpy as np
import pytest

from parl_algos_es import CMAES, ES, GA, ESAgent

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Could not import matplotlib")
    import cma

TARGET = np.linspace(-1.0, 1.0, 8)
SCALE = np.logspace(0, 3, 8)  # condition number 1000: what the covariance must learn


def quadratic(x: np.ndarray) -> float:
    """An ill-conditioned quadratic of the 8 parameters of LinearModel(3, 2); minimum 0."""
    return float(np.sum(SCALE * (np.asarray(x, dtype=np.float64) - TARGET) ** 2))


def generation(alg, evaluate=quadratic):
    records = alg.ask()
    values = [evaluate(alg.candidate(r)) for r in records]
    alg.tell(records, [-v for v in values])
    return min(values)


def test_cmaes_follows_cma_fmin_on_a_quadratic():
    parl.set_seed(0)
    alg = CMAES(LinearModel(3, 2), seed=5, sigma0=0.5)
    start = alg.flat.get().astype(np.float64)
    rng = np.random.default_rng(5)  # the stream CMAES(seed=5) samples with
    options = {
        "randn": lambda *shape: rng.standard_normal(shape),
        "seed": np.nan,
        "maxfevals": 1500,
        "verbose": -9,
        "verb_log": 0,
        "verb_disp": 0,
    }
    _, fmin_best, _, _, iterations, fmin_mean, *_ = cma.fmin(quadratic, start, 0.5, options)
    assert quadratic(start) > 1e3 and iterations > 100
    # The same evaluations on the float64 samples: the same search, step by step.
    for _ in range(iterations):
        records = alg.ask()
        alg.tell(records, [-quadratic(alg.population[r.key]) for r in records])
    np.testing.assert_array_equal(alg.strategy.mean, fmin_mean)
    assert alg.strategy.countevals == iterations * alg.strategy.popsize
    # fmin's best is its final mean; the model holds that mean in float32.
    assert quadratic(alg.flat.get()) <= fmin_best * 1.01
    assert fmin_best < 1e-6


def test_cmaes_on_float32_candidates_reaches_the_optimum():
    parl.set_seed(0)
    alg = CMAES(LinearModel(3, 2), seed=1, sigma0=0.5)
    best = min(generation(alg) for _ in range(150))
    assert best < 1e-5 and quadratic(alg.flat.get()) < 1e-5


def test_ga_improves_a_quadratic_and_keeps_its_elite():
    parl.set_seed(0)
    alg = GA(LinearModel(3, 2), seed=0, population_size=30, parents=6, mutation_stdev=0.05)
    start = quadratic(alg.flat.get())
    elites = []
    for _ in range(40):
        generation(alg)
        elites.append(quadratic(alg.flat.get()))
    assert all(b <= a for a, b in itertools.pairwise(elites)), "the elite got worse"
    assert elites[-1] < 0.05 * start, f"{start} → {elites[-1]}"


def test_ga_population_is_the_elite_plus_mutated_parents():
    parl.set_seed(0)
    alg = GA(LinearModel(3, 2), seed=0, population_size=6, parents=2, mutation_stdev=0.1)
    before = alg.population.copy()
    np.testing.assert_array_equal(before[0], alg.flat.get())
    records = alg.ask()
    alg.tell(records, [0.0, 5.0, 1.0, 9.0, 2.0, 3.0])  # slots 3 and 1 are the parents
    np.testing.assert_array_equal(alg.population[0], before[3])
    np.testing.assert_array_equal(alg.flat.get(), before[3])
    offsets = [min(np.abs(child - before[p]).max() for p in (3, 1)) for child in alg.population[1:]]
    assert max(offsets) < 0.6 and min(offsets) > 0, "children are not near-copies of parents"


@pytest.mark.parametrize("during_generation", [False, True])
def test_cmaes_resumes_exactly_from_a_solver_file(tmp_path, during_generation):
    def agent(seed):
        parl.set_seed(seed)
        return ESAgent(CMAES(LinearModel(3, 2), seed=seed, sigma0=0.3))

    first = agent(0)
    for _ in range(5):
        generation(first.alg)
    if during_generation:
        records = first.alg.ask()
    first.save_solver(tmp_path / "cma.solver")
    second = agent(1)
    second.load_solver(tmp_path / "cma.solver")
    np.testing.assert_array_equal(second.alg.flat.get(), first.alg.flat.get())
    for alg in (first.alg, second.alg):
        if during_generation:
            alg.tell(records, [-quadratic(alg.candidate(r)) for r in records])
        for _ in range(10):
            generation(alg)
    if during_generation:
        # Saved between ask and tell, the generation's samples come from the file while cma
        # holds parts of its sampling state that a solver file leaves out: the runs agree to
        # rounding (measured: 1e-14 after 10 generations), not bit for bit.
        np.testing.assert_allclose(second.alg.strategy.mean, first.alg.strategy.mean, rtol=1e-9)
    else:
        np.testing.assert_array_equal(second.alg.strategy.mean, first.alg.strategy.mean)
        assert second.alg.strategy.sigma == first.alg.strategy.sigma


def test_es_resumes_exactly_from_a_solver_file(tmp_path):
    def agent(seed):
        parl.set_seed(seed)
        es = ES(LinearModel(3, 2), seed=seed, noise_table_size=5_000, population_size=8)
        return ESAgent(es)

    first = agent(0)
    for _ in range(3):
        generation(first.alg)
    first.save_solver(tmp_path / "es.solver")
    first.save(tmp_path / "es.model")  # ES keeps θ in the model, apart from the solver
    second = agent(1)
    second.load_solver(tmp_path / "es.solver")
    second.restore(tmp_path / "es.model")
    for _ in range(3):
        generation(first.alg), generation(second.alg)
    np.testing.assert_array_equal(second.alg.flat.get(), first.alg.flat.get())
    assert second.alg.optimizer.steps == 6
