"""ES, CMA-ES and GA through parl.testing.AlgorithmContract, driven by ESAgent."""

from __future__ import annotations

from typing import Any, ClassVar

import parl
from parl.testing import AlgorithmContract, BadInput, LinearModel

import gymnasium as gym
import numpy as np
import pydantic

from parl_algos_es import ESAgent, SamplingRecord
from parl_algos_es.flat import FlatParameters

EYE = np.eye(4, dtype=np.float32)


def episode_return(agent: ESAgent, env: gym.Env, seed: int) -> float:
    """The return of one episode of ``env`` acting with ``agent.predict``."""
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(agent.predict(obs))
        total += float(reward)
        done = terminated or truncated
    return total


class EvolutionContract(AlgorithmContract):
    """The identity task with a linear policy: a generation of episodes per training step, on
    a paddle and on a torch policy (the torch runs carry the ``torch`` marker)."""

    backends = ("paddle", "torch")
    options: ClassVar[dict[str, Any]] = {}
    train_steps = 40
    short_train_steps = 4

    def make_agent(self, seed, **config):
        parl.set_seed(seed, backend=self.backend)
        policy = LinearModel(4, 4, backend=self.backend)
        # The same start on both frameworks: GA's population and CMA-ES's mean come from it.
        flat = FlatParameters(policy)
        flat.set(np.random.default_rng(seed).normal(0.0, 0.1, flat.size))
        algorithm = self.algorithm_class(policy, seed=seed, **{**self.options, **config})
        return ESAgent(algorithm, gym.spaces.Discrete(4))

    def train(self, agent, env, steps, seed):
        for generation in range(steps):
            records = agent.alg.ask()
            returns = []
            for record in records:
                agent.perturb(record)
                returns.append(episode_return(agent, env, seed=1000 * seed + generation))
            agent.update(records, returns)

    def learn_batch(self, agent, rng):
        obs = EYE[rng.integers(0, 4, 20)]
        records = agent.alg.ask()
        returns = []
        for record in records:
            agent.perturb(record)
            returns.append(float(np.mean(agent.predict(obs) == obs.argmax(1))))
        return list(agent.update(records, returns).values())

    def bad_inputs(self, agent):
        records = agent.alg.ask()
        yield from (
            BadInput(
                "one return fewer than records",
                lambda: agent.update(records, np.zeros(len(records) - 1)),
                ValueError,
                rf"rewards must have shape \({len(records)},\)",
            ),
            BadInput(
                "a NaN return",
                lambda: agent.update(records, np.full(len(records), np.nan)),
                ValueError,
                "NaN",
            ),
            BadInput(
                "string returns",
                lambda: agent.update(records, np.full(len(records), "x")),
                TypeError,
                "rewards must be numbers",
            ),
        )


class TestESContract(EvolutionContract):
    algorithm_name = "ES"
    options: ClassVar[dict[str, Any]] = {
        "noise_table_size": 100_000,
        "population_size": 16,
        "stepsize": 0.1,
        "noise_stdev": 0.5,
        "l2_coeff": 0.0,
    }

    def bad_inputs(self, agent):
        yield from super().bad_inputs(agent)
        yield from (
            BadInput(
                "a noise index out of range",
                lambda: agent.alg.learn([0, 10**9], [[1.0, 0.0], [0.0, 1.0]]),
                IndexError,
                r"noise index 1000000000 is out of range: .* starts at 0 … 99980",
            ),
            BadInput(
                "rewards of the wrong length",
                lambda: agent.alg.learn([0, 1, 2], [[1.0, 0.0], [0.0, 1.0]]),
                ValueError,
                r"rewards must have shape \(3, 2\)",
            ),
            BadInput(
                "rewards without the pair axis",
                lambda: agent.alg.learn([0, 1], [1.0, 0.0]),
                ValueError,
                r"rewards must have shape \(2, 2\)",
            ),
            BadInput(
                "a record without its antithetic partner",
                lambda: agent.update([SamplingRecord(5, 1)], [1.0]),
                ValueError,
                r"noise indices \[5\] lack their \+1 or -1 record",
            ),
            BadInput(
                "an odd population",
                lambda: agent.alg.ask(3),
                ValueError,
                "n must be even",
            ),
            BadInput(
                "a negative noise stdev",
                lambda: self.make_agent(0, noise_stdev=-1.0),
                pydantic.ValidationError,
                "noise_stdev",
            ),
            BadInput(
                "a noise table smaller than the model",
                lambda: self.make_agent(0, noise_table_size=10),
                ValueError,
                "raise noise_table_size",
            ),
        )


class TestGAContract(EvolutionContract):
    algorithm_name = "GA"
    options: ClassVar[dict[str, Any]] = {"population_size": 16, "parents": 4, "mutation_stdev": 0.5}

    def bad_inputs(self, agent):
        yield from super().bad_inputs(agent)
        yield from (
            BadInput(
                "a record of a past generation",
                lambda: agent.update(
                    [SamplingRecord(i, 1, agent.alg.generation + 1) for i in range(16)],
                    np.zeros(16),
                ),
                ValueError,
                r"records of generation \[\d+\] reached generation",
            ),
            BadInput(
                "a slot told twice",
                lambda: agent.update(
                    [SamplingRecord(0, 1, agent.alg.generation)] * 16, np.zeros(16)
                ),
                ValueError,
                "every one of the 16 candidates exactly once",
            ),
            BadInput(
                "more parents than candidates",
                lambda: self.make_agent(0, parents=20),
                pydantic.ValidationError,
                r"parents \(20\) cannot exceed population_size \(16\)",
            ),
        )


class TestCMAESContract(EvolutionContract):
    algorithm_name = "CMAES"
    options: ClassVar[dict[str, Any]] = {"sigma0": 0.5}

    def bad_inputs(self, agent):
        yield from super().bad_inputs(agent)
        size = agent.alg.strategy.popsize
        yield from (
            BadInput(
                "a partial generation",
                lambda: agent.update(agent.alg.ask()[:-1], np.zeros(size - 1)),
                ValueError,
                f"every one of the {size} candidates exactly once",
            ),
            BadInput(
                "a population of another size",
                lambda: agent.alg.ask(size + 1),
                ValueError,
                f"n must be {size} or None",
            ),
        )
