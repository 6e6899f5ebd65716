"""Contract tests for algorithm families: give a factory, get the standard test suite.

Subclass :class:`AlgorithmContract` in a test module under a name pytest collects
(``class TestDQN(AlgorithmContract)``), set :attr:`~AlgorithmContract.algorithm_class`, and
implement the hooks that only the family knows: how to build a seeded agent, how to feed
``learn`` one batch and, for a family that learns from its own experience, how to train it on
an identity task. The inherited tests then check what
every PARL algorithm owes its users:

* ``test_conformance``: :func:`parl.testing.check_algorithm` on a small instance;
* ``test_smoke``: ``predict`` on a batch and on one unbatched observation (PARL 2.x's
  agents pass single observations), exploration, one ``learn`` call with finite losses;
* ``test_learns_identity_env``: training reaches :attr:`~AlgorithmContract.solved_score` on
  :class:`~parl.testing.IdentityEnv` (or ``IdentityEnvBox``) where the untrained agent does not;
* ``test_same_seed_same_weights``: two runs from one seed end with equal weights, another seed
  differs;
* ``test_weights_are_parl_flat``: ``get_weights`` is the flat dict of ``alg.model`` and
  ``other.set_weights(agent.get_weights())`` makes equal predictions;
* ``test_save_restore``: :meth:`parl.Agent.save` / ``restore`` round-trip one model's weights
  through a safetensors file;
* ``test_checkpoint_resume``: train K steps, :meth:`~parl.Agent.save_checkpoint`, train K
  more, against a fresh agent that loads the checkpoint and trains K more: every model, every
  optimizer slot and the declared state end equal;
* ``test_bad_inputs``: a config typo, a string weight array, a truncated checkpoint, a PARL 2.x
  pickle without opt-in, and the family's own :meth:`~AlgorithmContract.bad_inputs` all raise
  clear errors and change no weight;
* ``test_cross_backend_learn`` (a family that runs on both backends): on paddle and on torch,
  given the same weights, the same batches and the same random draws
  (:func:`same_random_draws`), the algorithm ends :attr:`~AlgorithmContract.resume_steps` learn
  calls with the same weights, within :attr:`~AlgorithmContract.cross_backend_atol`.

A family with one implementation sets :attr:`~AlgorithmContract.algorithm_class`; a family
with both sets :attr:`~AlgorithmContract.algorithm_name` and
:attr:`~AlgorithmContract.backends`, and every test runs once per backend (parameter
``backend``; the torch runs carry the ``torch`` marker), with the class the registry gives
for that backend in ``self.algorithm_class`` and the backend's name in ``self.backend``.

Examples:
    .. code-block:: python

        class TestBandit(AlgorithmContract):
            algorithm_class = ContextualBandit
            solved_score = 0.9

            def make_agent(self, seed, **config):
                parl.set_seed(seed)
                return BanditAgent(ContextualBandit(LinearRewards(4, 4), **config))

            def learn_batch(self, agent, rng):
                obs = np.eye(4, dtype="float32")[rng.integers(0, 4, 32)]
                actions = agent.sample(obs)
                return agent.learn(obs, actions, (actions == obs.argmax(1)).astype("float32"))
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import parl
from parl.core.base import AgentBase, AlgorithmBase
from parl.core.errors import CheckpointError, WeightsMismatchError
from parl.core.tensor_files import file_format
from parl.testing.conformance import check_algorithm
from parl.testing.envs import IdentityEnv, IdentityEnvBox

import gymnasium as gym
import numpy as np
import pydantic
import pytest

if TYPE_CHECKING:
    from parl import Agent

__all__ = [
    "AlgorithmContract",
    "BadInput",
    "copy_weights_across",
    "identity_score",
    "max_weight_difference",
    "same_random_draws",
    "training_state",
]


@dataclass(frozen=True)
class BadInput:
    """One wrong use of an agent and the error it must raise.

    Attributes:
        name: what is wrong, shown when the case fails.
        call: makes the wrong call.
        error: the exception type expected.
        match: a regular expression the message must match.
    """

    name: str
    call: Callable[[], Any]
    error: type[BaseException] | tuple[type[BaseException], ...]
    match: str


def identity_score(predict: Callable[[Any], Any], env: gym.Env, episodes: int = 5) -> float:
    """Mean reward per step of the greedy policy ``predict`` (one observation in, one action out).

    On :class:`~parl.testing.IdentityEnv` this is the accuracy in ``[0, 1]``; on
    ``IdentityEnvBox`` the negative mean squared error (0 is perfect).
    """
    rewards = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=10_000 + episode)
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(predict(obs))
            rewards.append(float(reward))
            done = terminated or truncated
    return float(np.mean(rewards))


def training_state(agent: AgentBase) -> dict[str, np.ndarray]:
    """Every model's weights and every optimizer slot of ``agent``, as numpy arrays by name."""
    from parl.core.checkpoint import capture

    arrays, _ = capture(agent)
    return {name: value for name, value in arrays.items() if not name.startswith("rng/")}


def _model_weights(agent: AgentBase) -> dict[str, np.ndarray]:
    return {
        f"{path}/{name}": value
        for path, model in agent.alg.named_models()
        for name, value in model.get_weights().items()
    }


def _paddle_layout(agent: AgentBase) -> dict[str, np.ndarray]:
    """Every model's weights of a paddle or torch agent, laid out as paddle's."""
    if agent.backend.name == "paddle":
        return _model_weights(agent)
    from parl.core.torch.interop import to_paddle_weights

    return {
        f"{path}/{name}": value
        for path, model in agent.alg.named_models()
        for name, value in to_paddle_weights(model).items()
    }


def max_weight_difference(paddle_agent: AgentBase, torch_agent: AgentBase) -> float:
    """The largest absolute difference between the weights of every model of two agents.

    The torch agent's ``Linear`` weights are transposed to paddle's layout first; the two
    agents must hold the same models under the same names.
    """
    first, second = _paddle_layout(paddle_agent), _paddle_layout(torch_agent)
    assert sorted(first) == sorted(second), (sorted(first), sorted(second))
    return max(float(np.max(np.abs(first[k] - second[k]), initial=0.0)) for k in first)


def copy_weights_across(paddle_agent: AgentBase, torch_agent: AgentBase) -> None:
    """Give every model of ``torch_agent`` the weights of its namesake in ``paddle_agent``."""
    from parl.core.torch.interop import from_paddle_weights

    paddle_models = dict(paddle_agent.alg.named_models())
    for path, model in torch_agent.alg.named_models():
        model.set_weights(from_paddle_weights(model, paddle_models[path].get_weights()))


def _numpy_draws(ops: Any, rng: np.random.Generator) -> dict[str, Callable[..., Any]]:
    """The random draws of ``ops`` (:mod:`parl.core.ops`), taken from ``rng`` instead."""

    def as_tensor(array: np.ndarray, like: Any, dtype: str = "float32") -> Any:
        return ops.to_tensor(array, dtype, getattr(like, "device", None))

    def randn_like(x: Any) -> Any:
        return as_tensor(rng.standard_normal(tuple(x.shape)).astype(np.float32), x)

    def uniform_like(x: Any, low: float, high: float) -> Any:
        return as_tensor(rng.uniform(low, high, tuple(x.shape)).astype(np.float32), x)

    def multinomial(probs: Any) -> Any:
        cumulative = np.cumsum(ops.to_numpy(probs), axis=-1)
        draws = rng.random(cumulative.shape[0]) * cumulative[:, -1]
        index = np.minimum((cumulative <= draws[:, None]).sum(-1), cumulative.shape[1] - 1)
        return as_tensor(index.astype(np.int64), probs, "int64")

    return {"randn_like": randn_like, "uniform_like": uniform_like, "multinomial": multinomial}


@contextmanager
def same_random_draws(seed: int) -> Iterator[None]:
    """Inside the block, paddle's and torch's ops draw from numpy streams seeded alike.

    Each framework's ``randn_like``, ``uniform_like`` and ``multinomial``
    (:mod:`parl.core.ops`) take their numbers from a numpy generator of its own, seeded with
    ``seed``: an algorithm that makes the same draws on both frameworks gets the same numbers,
    so a paddle and a torch run can be compared exactly (the frameworks' own generators
    differ). Restored on exit.
    """
    from parl.core.backend import BACKENDS
    from parl.core.ops import ops_of_backend

    saved = []
    try:
        for name in BACKENDS:
            ops = ops_of_backend(name)
            for attr, draw in _numpy_draws(ops, np.random.default_rng(seed)).items():
                saved.append((ops, attr, getattr(ops, attr)))
                setattr(ops, attr, draw)
        yield
    finally:
        for ops, attr, original in saved:
            setattr(ops, attr, original)


def _assert_equal_arrays(first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> None:
    assert sorted(first) == sorted(second)
    different = [name for name in first if not np.array_equal(first[name], second[name])]
    assert not different, f"these entries differ: {different[:8]}"


class AlgorithmContract:
    """The standard tests of an algorithm family; subclass and fill in the hooks.

    A family's agent follows PARL's conventions: ``predict(obs)`` takes a batch
    ``[B, *obs_shape]`` or one observation ``[*obs_shape]`` and returns the greedy action(s)
    as numpy (an int or ``[act_dim]`` for one observation); ``learn`` takes numpy batches.
    """

    algorithm_class: type[AlgorithmBase]
    """The algorithm under test (for a family with both backends, set per test)."""
    algorithm_name: ClassVar[str | None] = None
    """The registry name to test on every backend of :attr:`backends` (instead of
    :attr:`algorithm_class`)."""
    backends: ClassVar[tuple[str, ...]] = ("paddle",)
    """The backends :attr:`algorithm_name` is tested on."""
    backend: str = "paddle"
    """The backend of the running test."""
    cross_backend_atol: ClassVar[float] = 1e-5
    """How far the two backends' weights may be apart after ``test_cross_backend_learn``."""
    action_kind: ClassVar[Literal["discrete", "continuous"]] = "discrete"
    """Which identity task it learns: ``IdentityEnv`` (discrete) or ``IdentityEnvBox``."""
    solved_score: ClassVar[float] = 0.95
    """The :func:`identity_score` that training must reach (an untrained agent must not)."""
    train_steps: ClassVar[int] = 400
    """The budget :meth:`train` gets in ``test_learns_identity_env``."""
    short_train_steps: ClassVar[int] = 60
    """The budget of the determinism test's two runs."""
    resume_steps: ClassVar[int] = 4
    """The K of the checkpoint-resume test: learn calls before and after the checkpoint."""

    # -- backends -----------------------------------------------------------------------------

    def _backends(self) -> tuple[str, ...]:
        if self.algorithm_name is None:
            from parl.algorithms._registry import runs_on

            return runs_on(type(self).algorithm_class)[:1]
        return self.backends

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The cross-backend test exists only for a family tested on both backends; a family's
        # own test_cross_backend_learn (on this class or a base below the kit) is kept.
        for klass in cls.__mro__[: cls.__mro__.index(AlgorithmContract)]:
            own = klass.__dict__.get("test_cross_backend_learn", None)
            if own is not None and own is not AlgorithmContract._cross_backend_learn:
                return
        both = cls.algorithm_name is not None and set(cls.backends) == {"paddle", "torch"}
        cross = AlgorithmContract._cross_backend_learn if both else None
        cls.test_cross_backend_learn = cross  # type: ignore[assignment,method-assign]

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "backend" in metafunc.fixturenames:
            # The cross-backend test runs once, as a torch test (it needs both frameworks).
            cross = metafunc.function.__name__ == "_cross_backend_learn"
            names = ("torch",) if cross else self._backends()
            params = [
                pytest.param(name, marks=[pytest.mark.torch] if name == "torch" else [], id=name)
                for name in names
            ]
            metafunc.parametrize("backend", params)

    @pytest.fixture(autouse=True)
    def _select_backend(self, backend: str) -> Iterator[None]:
        if importlib.util.find_spec(backend) is None:
            pytest.skip(f"{backend} is not installed (the {backend} tests run in `nox -s torch`)")
        self.backend = backend
        if self.algorithm_name is not None:
            self.algorithm_class = parl.algorithms.get(self.algorithm_name, backend=backend)
        yield

    # -- hooks --------------------------------------------------------------------------------

    def make_agent(self, seed: int, **config: Any) -> Agent:
        """A fresh agent for the identity task, with every generator seeded from ``seed``.

        ``config`` are hyperparameters to pass to the algorithm (the bad-input test passes a
        misspelt one).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement make_agent")

    def train(self, agent: Agent, env: gym.Env, steps: int, seed: int) -> None:
        """Train ``agent`` on ``env`` (a fresh identity env) for a budget of ``steps``.

        By default: ``steps`` calls of :meth:`learn_batch` with a generator seeded from
        ``seed``, which suits bandit-like and supervised algorithms; a family that learns from
        its own experience overrides this with its acting loop.
        """
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            self.learn_batch(agent, rng)

    def learn_batch(self, agent: Agent, rng: np.random.Generator) -> Any:
        """Make one ``learn`` call on a batch drawn with ``rng``; return what it returns."""
        raise NotImplementedError(f"{type(self).__name__} must implement learn_batch")

    def explore(self, agent: Agent, obs: np.ndarray) -> Any:
        """An exploratory action for one observation (``agent.sample(obs)`` by default)."""
        return agent.sample(obs)

    def bad_inputs(self, agent: Agent) -> Iterable[BadInput]:
        """The family's own wrong calls (batch shapes, action types, …) and their errors."""
        return ()

    def make_env(self) -> gym.Env:
        """The identity task: ``IdentityEnv(4)`` or ``IdentityEnvBox(1)``."""
        if self.action_kind == "discrete":
            return IdentityEnv(4, episode_length=20)
        return IdentityEnvBox(1, episode_length=20)

    # -- helpers ------------------------------------------------------------------------------

    def _probe(self, count: int = 8) -> np.ndarray:
        env = self.make_env()
        return np.stack([env.reset(seed=seed)[0] for seed in range(count)])

    def _trained_a_little(self, seed: int) -> Agent:
        agent = self.make_agent(seed)
        rng = np.random.default_rng(seed)
        for _ in range(self.resume_steps):
            self.learn_batch(agent, rng)
        return agent

    # -- the tests ----------------------------------------------------------------------------

    def test_conformance(self) -> None:
        check_algorithm(self.algorithm_class, lambda: self.make_agent(0).alg)

    def test_smoke(self) -> None:
        agent, env = self.make_agent(0), self.make_env()
        obs, _ = env.reset(seed=0)
        action = agent.predict(obs)
        assert env.action_space.contains(np.asarray(action, dtype=env.action_space.dtype)), (
            f"predict(one observation) gave {action!r}, not an action of {env.action_space}"
        )
        env.step(self.explore(agent, obs))
        batch = self._probe()
        assert np.shape(agent.predict(batch))[0] == len(batch)
        losses = np.asarray(self.learn_batch(agent, np.random.default_rng(0)), dtype=np.float64)
        assert np.isfinite(losses).all(), f"learn returned {losses}"

    def test_learns_identity_env(self) -> None:
        agent, env = self.make_agent(0), self.make_env()
        before = identity_score(agent.predict, env)
        assert before < self.solved_score, f"the untrained agent already scores {before}"
        self.train(agent, env, self.train_steps, seed=0)
        after = identity_score(agent.predict, env)
        assert after >= self.solved_score, f"scores {after} after training (before: {before})"

    def test_same_seed_same_weights(self) -> None:
        def weights(seed: int) -> dict[str, np.ndarray]:
            agent = self.make_agent(seed)
            self.train(agent, self.make_env(), self.short_train_steps, seed=seed)
            return _model_weights(agent)

        first, second, other = weights(3), weights(3), weights(4)
        _assert_equal_arrays(first, second)
        assert any(not np.array_equal(first[k], other[k]) for k in first), "seed had no effect"

    def test_weights_are_parl_flat(self) -> None:
        agent, other = self._trained_a_little(0), self.make_agent(1)
        weights = agent.get_weights()
        assert sorted(weights) == sorted(dict(agent.alg.named_models())["model"].state_dict())
        assert all(isinstance(value, np.ndarray) for value in weights.values())
        other.set_weights(weights)
        probe = self._probe()
        np.testing.assert_array_equal(other.predict(probe), agent.predict(probe))

    def test_save_restore(self, tmp_path: Path) -> None:
        agent, other = self._trained_a_little(0), self.make_agent(1)
        path = tmp_path / "model.ckpt"
        agent.save(path)
        assert file_format(path) == "safetensors", "save did not write a safetensors file"
        probe = self._probe()
        untouched = {p: m.get_weights() for p, m in other.alg.named_models() if p != "model"}
        other.restore(path)
        np.testing.assert_array_equal(other.predict(probe), agent.predict(probe))
        np.testing.assert_array_equal(other.predict(probe[0]), agent.predict(probe[0]))
        for path_name, weights in untouched.items():  # PARL's meaning: one model only
            model = dict(other.alg.named_models())[path_name]
            _assert_equal_arrays(model.get_weights(), weights)

    def test_checkpoint_resume(self, tmp_path: Path) -> None:
        path = tmp_path / "run.ckpt"
        agent = self._trained_a_little(0)
        agent.save_checkpoint(path)
        rng = np.random.default_rng(123)
        for _ in range(self.resume_steps):
            self.learn_batch(agent, rng)
        uninterrupted = training_state(agent)

        resumed = self.make_agent(1)
        fresh, trained = _model_weights(resumed), _model_weights(agent)
        assert any(not np.array_equal(v, trained[k]) for k, v in fresh.items()), (
            "a fresh agent already equals the trained one: the test would prove nothing"
        )
        resumed.load_checkpoint(path)
        rng = np.random.default_rng(123)
        for _ in range(self.resume_steps):
            self.learn_batch(resumed, rng)
        _assert_equal_arrays(training_state(resumed), uninterrupted)

    def test_bad_inputs(self, tmp_path: Path) -> None:
        with pytest.raises(pydantic.ValidationError, match="surely_not_a_field"):
            self.make_agent(0, surely_not_a_field=1)
        agent = self._trained_a_little(0)
        before = _model_weights(agent)
        weights = agent.get_weights()
        name = next(iter(weights))
        truncated = tmp_path / "truncated.ckpt"
        agent.save_checkpoint(truncated)
        truncated.write_bytes(truncated.read_bytes()[:200])
        legacy = tmp_path / "parl2.pdparams"
        _save_legacy(agent, legacy)
        cases = [
            BadInput(
                "a string array of the right shape in set_weights",
                lambda: agent.set_weights(
                    {
                        **{k: v + 1 for k, v in weights.items()},
                        name: np.full(weights[name].shape, "x"),
                    }
                ),
                WeightsMismatchError,
                "numbers",
            ),
            BadInput(
                "a truncated checkpoint",
                lambda: agent.load_checkpoint(truncated),
                CheckpointError,
                "truncated",
            ),
            BadInput(
                "a PARL 2.x pickle without allow_pickle",
                lambda: agent.restore(legacy),
                CheckpointError,
                "allow_pickle=True",
            ),
            *self.bad_inputs(agent),
        ]
        for case in cases:
            with pytest.raises(case.error, match=case.match):
                case.call()
            _assert_equal_arrays(_model_weights(agent), before)

    test_cross_backend_learn: Any = None
    """``_cross_backend_learn`` for a family tested on both backends (see ``__init_subclass__``)."""

    def _cross_backend_learn(self) -> None:
        """Same weights, same batches: the paddle and the torch class learn the same."""
        if importlib.util.find_spec("paddle") is None:
            pytest.fail("the cross-backend test needs paddle next to torch")
        agents = {}
        for name in ("paddle", "torch"):
            self.backend = name
            self.algorithm_class = parl.algorithms.get(str(self.algorithm_name), backend=name)
            agents[name] = self.make_agent(0)
        copy_weights_across(agents["paddle"], agents["torch"])
        assert max_weight_difference(agents["paddle"], agents["torch"]) == 0.0
        before = _model_weights(agents["paddle"])
        with same_random_draws(11):
            for agent in agents.values():
                rng = np.random.default_rng(7)
                for _ in range(self.resume_steps):
                    self.learn_batch(agent, rng)
        after = _model_weights(agents["paddle"])
        assert any(not np.array_equal(before[k], after[k]) for k in before), (
            "learn changed no weight: the comparison would prove nothing"
        )
        difference = max_weight_difference(agents["paddle"], agents["torch"])
        print(
            f"{self.algorithm_name}: max |paddle - torch| after {self.resume_steps} learn "
            f"calls = {difference:.3g}"
        )
        assert difference <= self.cross_backend_atol, difference


def _save_legacy(agent: AgentBase, path: Path) -> None:
    """Write the main model as PARL 2.x did on the agent's backend (a pickle)."""
    model = dict(agent.alg.named_models())["model"]
    if agent.backend.name == "torch":
        import torch

        torch.save(model.state_dict(), path)
    else:
        import paddle

        paddle.save(model.state_dict(), str(path))
