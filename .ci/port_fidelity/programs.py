"""The PARL 2.2.1 programs the port-fidelity run copies, and the edits each one gets.

Every program also gets ``import gym`` → ``import gymnasium as gym`` (and ``from gym`` →
``from gymnasium``) in each of its files, the one change every PARL 2.x program needs here.
An :class:`Edit` is a regular expression replaced in one file; it must match, so a list that
no longer fits PARL's source stops the run instead of passing silently. ``kind="port"`` edits
are the unavoidable ones a user makes, each for a change outside this project (gymnasium 1.x,
numpy 2, paddle 3, an env that moved); ``kind="budget"`` edits only make the run tiny or point
it at the run's own xparl cluster (``{xparl}``), as a user sets their own cluster's address.
"""

from __future__ import annotations

from dataclasses import dataclass

PARL_COMMIT = "3bb5fe36d245f4d69bae0710dc1dc9d1a172f64d"
"""PARL's master at its 2.2.1 release line (the mirror this project was measured against)."""


@dataclass(frozen=True)
class Edit:
    file: str
    pattern: str
    new: str
    reason: str
    kind: str = "budget"


@dataclass(frozen=True)
class Program:
    folder: str
    backend: str
    entry: str = "train.py"
    args: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()
    env_modules: tuple[str, ...] = ()
    """Modules of the program's environment: their absence means the env does not install."""
    data_files: tuple[str, ...] = ()
    """Files its README has the user download (not in PARL's repository)."""
    cluster: bool = False
    cwd: str = "."
    """Where the entry script is, inside the folder (a program of several tracks)."""

    @property
    def name(self) -> str:
        """The folder, and the track where a folder holds several programs."""
        return self.folder if self.cwd == "." else f"{self.folder}/{self.cwd}"


def const(file: str, name: str, value: str) -> Edit:
    """A module-level constant set smaller for a tiny run."""
    return Edit(file, rf"^{name} = .*$", f"{name} = {value}", f"{name} = {value}")


def key(file: str, name: str, value: str) -> Edit:
    """A config dict entry set smaller for a tiny run (or to the run's cluster)."""
    return Edit(file, rf"'{name}': [^,\n]*,", f"'{name}': {value},", f"{name}: {value}")


MUJOCO_ARGS = ("--train_total_steps", "1500", "--test_every_steps", "1000")
ATARI_LIKE_ENVS = ("ale_py", "cv2")
D4RL = ("d4rl", "mujoco_py")
SMAC = ("smac", "pysc2")
SIX = "six, Python 2's compatibility layer that PARL 2.x's dependencies installed: Python 3's queue"
ALE_IMPORT = "import ale_py  # gymnasium 1.x registers no env package by itself\n"


def _ale(file: str) -> Edit:
    return Edit(
        file,
        r"^import gymnasium as gym$",
        "import gymnasium as gym\n" + ALE_IMPORT.rstrip("\n"),
        "import ale_py: gymnasium 1.x registers the Atari games only when asked",
        "port",
    )


def _running_stat(file: str) -> Edit:
    return Edit(
        file,
        r"np\.zeros\(shape\)",
        "np.zeros(() if shape is None else shape)",
        "numpy 2 refuses np.zeros(None) (numpy 1 read it as a scalar's shape)",
        "port",
    )


def _mujoco(folder: str, backend: str, warmup: str = "WARMUP_STEPS") -> Program:
    return Program(folder, backend, args=MUJOCO_ARGS, edits=(const("train.py", warmup, "500"),))


PADDLE = [
    Program("examples/QuickStart", "paddle", args=("--max_episodes", "30")),
    Program("examples/DQN", "paddle", args=("--max_episode", "60")),
    Program(
        "examples/DQN_variant",
        "paddle",
        args=("--warmup_size", "300", "--train_total_steps", "1500", "--test_every_steps", "1000"),
        edits=(_ale("train.py"),),
        env_modules=ATARI_LIKE_ENVS,
    ),
    _mujoco("examples/DDPG", "paddle"),
    _mujoco("examples/TD3", "paddle"),
    _mujoco("examples/SAC", "paddle"),
    Program(
        "examples/OAC",
        "paddle",
        args=("--env", "HalfCheetah-v4", *MUJOCO_ARGS),
        edits=(const("train.py", "WARMUP_STEPS", "500"),),
    ),
    Program("examples/CQL", "paddle", args=MUJOCO_ARGS, env_modules=D4RL),
    Program(
        "examples/PPO",
        "paddle",
        args=("--env", "HalfCheetah-v4", "--continuous_action", "--train_total_steps", "5000"),
    ),
    Program(
        "examples/MADDPG",
        "paddle",
        args=("--max_episodes", "40", "--test_every_episodes", "20"),
        edits=(const("train.py", "BATCH_SIZE", "32"),),
        env_modules=("pettingzoo", "mpe2"),
    ),
    Program("examples/QMIX", "paddle", env_modules=SMAC),
    Program(
        "examples/A2C",
        "paddle",
        edits=(
            key("a2c_config.py", "master_address", "'{xparl}'"),
            key("a2c_config.py", "actor_num", "2"),
            key("a2c_config.py", "max_sample_steps", "2000"),
        ),
        env_modules=ATARI_LIKE_ENVS,
        cluster=True,
    ),
    Program(
        "examples/IMPALA",
        "paddle",
        edits=(
            Edit("actor.py", r"^import six\n", "", SIX, "port"),
            Edit("train.py", r"^from six\.moves import queue$", "import queue", SIX, "port"),
            Edit(
                "train.py",
                r"loader = paddle\.io\.DataLoader\.from_generator\(capacity=5\)\n"
                r"\s*loader\.set_batch_generator\(self\._batch_reader\(\)\)",
                "loader = self._batch_reader()",
                "paddle 3 has no DataLoader.from_generator: the learner reads the batch generator",
                "port",
            ),
            key("impala_config.py", "master_address", "'{xparl}'"),
            key("impala_config.py", "actor_num", "2"),
            key("impala_config.py", "train_batch_size", "100"),
        ),
        env_modules=ATARI_LIKE_ENVS,
        cluster=True,
    ),
    Program(
        "examples/ES",
        "paddle",
        args=("--train_steps", "2", "--actor_num", "2"),
        edits=(
            _running_stat("obs_filter.py"),
            key("es_config.py", "master_address", "'{xparl}'"),
            key("es_config.py", "min_episodes_per_batch", "4"),
            key("es_config.py", "min_steps_per_batch", "400"),
            key("es_config.py", "noise_size", "1000000"),
        ),
        cluster=True,
    ),
    Program(
        "examples/AlphaZero",
        "paddle",
        entry="main.py",
        edits=(
            key("main.py", "master_address", "'{xparl}'"),
            key("main.py", "actors_num", "2"),
            key("main.py", "numIters", "1"),
            key("main.py", "numEps", "2"),
            key("main.py", "arenaCompare", "4"),
            key("main.py", "numMCTSSims", "5"),
        ),
        env_modules=("kaggle_environments",),
        data_files=("refmoves1k_kaggle",),
        cluster=True,
    ),
]

TORCH = [
    Program(
        "benchmark/torch/QuickStart",
        "torch",
        edits=(Edit("train.py", r"range\(1000\):  # 1000 episodes", "range(30):", "30 episodes"),),
    ),
    Program(
        "benchmark/torch/dqn",
        "torch",
        args=("--train_total_steps", "1500", "--test_every_steps", "1000"),
        edits=(
            _ale("train.py"),
            const("train.py", "MEMORY_WARMUP_SIZE", "300"),
        ),
        env_modules=ATARI_LIKE_ENVS,
    ),
    _mujoco("benchmark/torch/ddpg", "torch"),
    _mujoco("benchmark/torch/td3", "torch", warmup="WARMUP_SIZE"),
    _mujoco("benchmark/torch/sac", "torch"),
    Program(
        "benchmark/torch/oac",
        "torch",
        args=("--env", "HalfCheetah-v4", *MUJOCO_ARGS),
        edits=(const("train.py", "WARMUP_STEPS", "500"),),
    ),
    Program("benchmark/torch/cql", "torch", args=MUJOCO_ARGS, env_modules=D4RL),
    Program("benchmark/torch/iql", "torch", args=MUJOCO_ARGS, env_modules=D4RL),
    Program(
        "benchmark/torch/ppo",
        "torch",
        args=("--env", "HalfCheetah-v4", "--continuous_action", "--test_every_steps", "1000"),
    ),
    Program(
        "benchmark/torch/maddpg",
        "torch",
        args=("--max_episodes", "40", "--test_every_episodes", "20"),
        edits=(const("train.py", "BATCH_SIZE", "32"),),
        env_modules=("pettingzoo", "mpe2"),
    ),
    Program(
        "benchmark/torch/mappo",
        "torch",
        args=("--env_num", "2", "--train_total_steps", "400"),
        env_modules=("multiagent",),  # OpenAI's particle envs, installed from their git only
    ),
    Program("benchmark/torch/qmix", "torch", env_modules=SMAC),
    Program("benchmark/torch/coma", "torch", env_modules=SMAC),
    Program("benchmark/torch/DT", "torch", env_modules=(*D4RL, "transformers")),
    Program("benchmark/torch/maml++", "torch", env_modules=("learn2learn", "torchvision")),
    Program(
        "benchmark/torch/a2c",
        "torch",
        edits=(
            key("a2c_config.py", "master_address", "'{xparl}'"),
            key("a2c_config.py", "actor_num", "2"),
            key("a2c_config.py", "max_sample_steps", "2000"),
        ),
        env_modules=ATARI_LIKE_ENVS,
        cluster=True,
    ),
    Program(
        "benchmark/torch/ES",
        "torch",
        edits=(
            _running_stat("obs_filter.py"),
            Edit(
                "utils.py",
                r"dtype=np\.int\)",
                "dtype=int)",
                "numpy 1.24 removed the alias np.int",
                "port",
            ),
            key("es_config.py", "master_address", "'{xparl}'"),
            key("es_config.py", "env_name", "'HalfCheetah-v4'"),
            key("es_config.py", "actor_num", "2"),
            key("es_config.py", "train_steps", "2"),
            key("es_config.py", "min_episodes_per_batch", "4"),
            key("es_config.py", "min_steps_per_batch", "400"),
            key("es_config.py", "noise_size", "1000000"),
        ),
        cluster=True,
    ),
    Program(
        "benchmark/torch/AlphaZero",
        "torch",
        entry="main.py",
        edits=(
            key("main.py", "master_address", "'{xparl}'"),
            key("main.py", "actors_num", "2"),
            key("main.py", "numIters", "1"),
            key("main.py", "numEps", "2"),
            key("main.py", "arenaCompare", "4"),
            key("main.py", "numMCTSSims", "5"),
        ),
        env_modules=("kaggle_environments",),
        data_files=("refmoves1k_kaggle",),
        cluster=True,
    ),
    *(
        Program(
            "benchmark/torch/NeurIPS2020-Learning-to-Run-a-Power-Network-Challenge",
            "torch",
            entry="evaluate.py",
            cwd=track,
            env_modules=("grid2op", "lightsim2grid"),
        )
        for track in ("track1", "track2")
    ),
    Program(
        "examples/Baselines/GridDispatch_competition/torch",
        "torch",
        env_modules=("Environment", "utilize"),
    ),
    Program(
        "examples/Baselines/Halite_competition/torch",
        "torch",
        env_modules=("kaggle_environments", "zerosum_env"),
    ),
]

PROGRAMS: list[Program] = [*PADDLE, *TORCH]
