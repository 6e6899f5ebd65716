"""Damaged files at every loader PARL has: each must load or raise its file kind's error.

``nox -s fuzz`` runs this (it is not in the default set). A valid file of each kind is written
once; hypothesis then damages it -- bytes flipped, cut out or inserted, or, where the file holds
JSON (safetensors headers, Minari metadata, results files), any value anywhere replaced by any
JSON value, or an array replaced by one of another dtype, shape or NaN/huge values -- and the
loader must accept it or raise the error its file kind names (:class:`CheckpointError` for
checkpoints, weights and solver files, :class:`DatasetError` for datasets, ``ValueError`` for
replay-memory and results files), leaving what it loads into unchanged. Anything else (another
exception, a hang, a crash) fails the session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import parl
from parl.core.errors import CheckpointError, DatasetError
from parl.core.tensor_files import read_tensor_file, write_tensor_file
from parl.testing import LinearModel

import gymnasium as gym
import numpy as np
import paddle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# -- damage ------------------------------------------------------------------------------------

_EDITS = ("flip", "cut", "insert")


def _apply(data: bytes, edits: list[tuple[str, int, bytes]]) -> bytes:
    out = bytearray(data)
    for kind, at, payload in edits:
        at = min(at, len(out))
        if kind == "flip" and at < len(out):
            out[at] = payload[0]
        elif kind == "cut":
            del out[at : at + len(payload)]
        else:
            out[at:at] = payload
    return bytes(out)


def damaged_bytes(data: bytes) -> st.SearchStrategy[bytes]:
    """``data`` with 1-8 edits, half of them in its first 4 KiB (where headers live)."""
    position = st.integers(0, min(len(data), 4096)) | st.integers(0, len(data))
    edit = st.tuples(st.sampled_from(_EDITS), position, st.binary(min_size=1, max_size=16))
    return st.lists(edit, min_size=1, max_size=8).map(lambda edits: _apply(data, edits))


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([0, -1, 2**63, 10**400])
    | st.floats()
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        yield from _paths(item, (*prefix, key))


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    owner = copy
    for key in path[:-1]:
        owner = owner[key]
    owner[path[-1]] = new
    return copy


def damaged_json(value: Any) -> st.SearchStrategy[Any]:
    """``value`` with one node (a leaf, a list, an object, or the whole) replaced by any JSON."""
    paths = list(_paths(value))
    return st.tuples(st.sampled_from(paths), JSON).map(lambda pick: _replaced(value, *pick))


ARRAYS = hnp.arrays(
    st.sampled_from([np.float32, np.float64, np.int64, np.uint8, np.uint32, np.bool_]),
    hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
)
SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1e38, 0.0])


def damaged_tensor_file(path: Path) -> st.SearchStrategy[Callable[[Path], None]]:
    """Writers of ``path``'s safetensors file damaged in its bytes, its PARL metadata, or one
    array (replaced by another dtype/shape, or with a special value written into it)."""
    data = path.read_bytes()
    loaded = read_tensor_file(path)
    tensors, metadata = dict(loaded.tensors), loaded.metadata
    names = sorted(tensors)

    def with_metadata(new: Any) -> Callable[[Path], None]:
        return lambda target: write_tensor_file(target, tensors, new)

    def with_array(name: str, array: np.ndarray) -> Callable[[Path], None]:
        return lambda target: write_tensor_file(target, {**tensors, name: array}, metadata)

    def with_special(name: str, index: int, value: float) -> Callable[[Path], None]:
        array = tensors[name].copy()
        if array.size and array.dtype.kind == "f":
            with np.errstate(over="ignore"):
                array.flat[index % array.size] = value
        return with_array(name, array)

    return st.one_of(
        damaged_bytes(data).map(lambda b: lambda target: target.write_bytes(b)),
        damaged_json(metadata).map(with_metadata),
        st.tuples(st.sampled_from(names), ARRAYS).map(lambda pick: with_array(*pick)),
        st.tuples(st.sampled_from(names), st.integers(0, 10**6), SPECIAL).map(
            lambda pick: with_special(*pick)
        ),
    )


def _refused_or_loaded(load: Callable[[], Any], errors: tuple[type[BaseException], ...]) -> bool:
    """Run ``load``; True if it refused with one of ``errors``. Any other exception escapes."""
    try:
        load()
    except errors:
        return True
    return False


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _weights(agent: Any) -> dict[str, np.ndarray]:
    return {k: np.array(v) for k, v in agent.get_weights().items()}


def _assert_weights(agent: Any, before: dict[str, np.ndarray]) -> None:
    after = _weights(agent)
    assert sorted(after) == sorted(before)
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)


# -- checkpoints and weights of both backends ------------------------------------------------


def _dqn_agent(backend: str) -> Any:
    if backend == "torch":
        pytest.importorskip("torch")
        from parl_algos_dqn.torch import DQN, DQNAgent, QNetwork
    else:
        from parl_algos_dqn import DQN, DQNAgent, QNetwork
    parl.set_seed(0, backend=backend)
    agent = DQNAgent(DQN(QNetwork(3, 2, (8,)), lr=1e-3), 2, seed=0)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(4, 3)).astype(np.float32)
    agent.learn(obs, np.array([0, 1, 1, 0]), np.ones(4, np.float32), obs, np.zeros(4, bool))
    return agent


@pytest.mark.parametrize("backend", ["paddle", "torch"])
@pytest.mark.parametrize("kind", ["checkpoint", "weights"])
def test_checkpoint_and_weights_files(backend: str, kind: str, workdir: Path) -> None:
    agent = _dqn_agent(backend)
    good = workdir / f"{backend}.{kind}"
    (agent.save_checkpoint if kind == "checkpoint" else agent.save)(good)
    load = agent.load_checkpoint if kind == "checkpoint" else agent.restore

    @given(write=damaged_tensor_file(good))
    def check(write: Callable[[Path], None]) -> None:
        path = workdir / f"damaged-{backend}.{kind}"
        write(path)
        before = _weights(agent)
        if _refused_or_loaded(lambda: load(path), (CheckpointError,)):
            _assert_weights(agent, before)

    check()


def test_parl2_pickles(workdir: Path) -> None:
    good = workdir / "parl2.pdparams"
    paddle.save(LinearModel(3, 2).state_dict(), str(good))

    @given(data=damaged_bytes(good.read_bytes()))
    def check(data: bytes) -> None:
        path = workdir / "damaged.pdparams"
        path.write_bytes(data)
        _refused_or_loaded(lambda: read_tensor_file(path, allow_pickle=True), (CheckpointError,))

    check()


# -- ES solver files, the noise table -----------------------------------------------------------


def test_es_solver_files(workdir: Path) -> None:
    from parl_algos_es import CMAES, ESAgent

    def agent(seed: int) -> ESAgent:
        parl.set_seed(seed)
        es = ESAgent(
            CMAES(LinearModel(3, 2), seed=seed, population_size=4),
            gym.spaces.Discrete(2),
            observation_shape=(3,),
            normalize_observations=True,
        )
        records = [es.add_noise() for _ in range(4)]
        es.predict(np.ones((2, 3)))
        es.update(records, [0.0, 1.0, 0.5, 0.25])
        return es

    good = workdir / "cma.solver"
    agent(0).save_solver(good)

    @given(write=damaged_tensor_file(good))
    def check(write: Callable[[Path], None]) -> None:
        path = workdir / "damaged.solver"
        write(path)
        target = agent(1)
        before = (json.dumps(target.alg.solver_state()[1]), target.obs_count, target.alg.flat.get())
        if _refused_or_loaded(lambda: target.load_solver(path), (CheckpointError,)):
            after = (
                json.dumps(target.alg.solver_state()[1]),
                target.obs_count,
                target.alg.flat.get(),
            )
            assert before[:2] == after[:2]
            np.testing.assert_array_equal(before[2], after[2])
        target.update([target.add_noise() for _ in range(4)], [0.0, 1.0, 0.5, 0.25])

    check()


def test_noise_table_segments() -> None:
    from parl_algos_es import SharedNoiseTable, noise

    size, seed = noise.MACHINE_SHARE_MIN, 50_000 + os.getpid()
    private = SharedNoiseTable(size, seed).noise
    header = noise._HEADER.pack(noise._MAGIC, size, seed, 1).ljust(noise._OFFSET, b"\0")
    good = header + private.tobytes()
    path = Path("/dev/shm") / noise._segment_name(size, seed)
    original_timeout = noise.ATTACH_TIMEOUT_S
    noise.ATTACH_TIMEOUT_S = 0.05

    @given(data=damaged_bytes(good))
    def check(data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            table = SharedNoiseTable(size, seed, machine=True)
            np.testing.assert_array_equal(table.noise, private)
        finally:
            path.unlink()

    try:
        check()
    finally:
        noise.ATTACH_TIMEOUT_S = original_timeout


# -- replay memories, datasets, results ---------------------------------------------------------


def test_replay_memory_files(workdir: Path) -> None:
    from parl.utils import ReplayMemory

    memory = ReplayMemory(8, obs_dim=3, act_dim=2, seed=0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        memory.append(rng.normal(size=3), rng.normal(size=2), 1.0, rng.normal(size=3), False)
    good = memory.save(workdir / "rpm.npz")

    @given(data=damaged_bytes(good.read_bytes()))
    def check(data: bytes) -> None:
        path = workdir / "damaged.npz"
        path.write_bytes(data)
        target = ReplayMemory(8, obs_dim=3, act_dim=2, seed=1)
        target.append(np.zeros(3), np.zeros(2), 0.0, np.zeros(3), True)
        if _refused_or_loaded(lambda: target.load(path), (ValueError,)):
            assert len(target) == 1 and target.terminal[0]

    check()


def _pendulum(rows: int = 60) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(rows, 3)).astype(np.float32)
    return {
        "observations": obs,
        "actions": rng.uniform(-1, 1, (rows, 1)).astype(np.float32),
        "rewards": rng.normal(size=rows).astype(np.float32),
        "next_observations": obs + 1,
        "terminals": np.zeros(rows, bool),
        "timeouts": np.arange(rows) % 20 == 19,
    }


def test_d4rl_hdf5_files(workdir: Path) -> None:
    from parl.utils.offline import load_d4rl_hdf5, save_d4rl_hdf5

    good = save_d4rl_hdf5(_pendulum(), workdir / "d4rl.hdf5")

    @given(data=damaged_bytes(good.read_bytes()))
    def check(data: bytes) -> None:
        path = workdir / "damaged.hdf5"
        path.write_bytes(data)
        _refused_or_loaded(lambda: load_d4rl_hdf5(path), (DatasetError,))

    check()


def _minari_dataset(root: Path) -> Path:
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    os.environ["MINARI_DATASETS_PATH"] = str(root)
    data = _pendulum(40)
    episodes = [
        EpisodeBuffer(
            id=i,
            observations=np.concatenate(
                [data["observations"][rows], data["next_observations"][rows][-1:]]
            ),
            actions=data["actions"][rows],
            rewards=list(data["rewards"][rows]),
            terminations=list(data["terminals"][rows]),
            truncations=list(data["timeouts"][rows]),
        )
        for i, rows in enumerate([slice(0, 20), slice(20, 40)])
    ]
    minari.create_dataset_from_buffers(
        "fuzz/pendulum/random-v0",
        episodes,
        observation_space=gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
        action_space=gym.spaces.Box(-1, 1, (1,), np.float32),
        algorithm_name="random",
        author="PARL fuzz",
        author_email="none",
        code_permalink="none",
        description="fuzz",
    )
    return root / "fuzz" / "pendulum" / "random-v0" / "data"


@pytest.mark.parametrize("part", ["main_data.hdf5", "metadata.json"])
def test_minari_datasets(part: str, workdir: Path) -> None:
    from parl.utils.offline import load_minari

    data = _minari_dataset(workdir / f"minari-{part}")
    target = data / part
    good = target.read_bytes()
    damage = (
        damaged_bytes(good)
        if part.endswith("hdf5")
        else damaged_json(json.loads(good)).map(lambda m: json.dumps(m).encode())
    )

    @given(data=damage)
    def check(data: bytes) -> None:
        target.write_bytes(data)
        _refused_or_loaded(lambda: load_minari(target.parent), (DatasetError,))

    try:
        check()
    finally:
        target.write_bytes(good)


def test_benchmark_results_files(workdir: Path) -> None:
    from parl.utils.results import Benchmark, BenchmarkRun, load_results, save_results

    run = BenchmarkRun(
        env_id="CartPole-v1", seed=0, env_steps=2000, wall_s=1.0, sps=2000.0,
        final_eval_return=500.0, best_eval_return=500.0, best_eval_step=2000, target=475.0,
        first_target_step=2000, evals=[(1000, 120.0), (2000, 500.0)],
        command="python -m benchmarks.run PPO CartPole-v1", commit="abc1234", machine="cpu",
    )  # fmt: skip
    good = workdir / "results.json"
    save_results({"CartPole-v1": Benchmark(algo="PPO", config={}, runs=[run])}, good)
    damage = damaged_bytes(good.read_bytes()) | damaged_json(json.loads(good.read_text())).map(
        lambda value: json.dumps(value).encode()
    )

    @given(data=damage)
    def check(data: bytes) -> None:
        path = workdir / "damaged.json"
        path.write_bytes(data)
        _refused_or_loaded(lambda: load_results(path), (ValueError,))

    check()
