"""The one entry point for development tasks: ``nox`` runs the CI set, ``nox -l`` lists them.

Default sessions (what CI runs): ``lint``, ``typecheck``, ``tests`` (no torch), ``torch`` (the
torch backend's tests, with torch's CPU build), ``browser``, ``packaging`` (the wheelhouse,
checked, and every install line of the docs installed from it), ``plugin``, ``examples``,
``docs``. Opt-in: ``bench`` (``nox -s bench -- <ALGO> <ENV>``), ``ray_examples``, ``fuzz``
(damaged files at every loader), ``wheelhouse`` (the checked wheels and sdists in ``dist/``:
what ``.ci/release.yml`` publishes).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import nox

nox.needs_version = ">=2024.4.15"
nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.sessions = [
    "lint",
    "typecheck",
    "tests",
    "torch",
    "browser",
    "packaging",
    "plugin",
    "examples",
    "docs",
]

# Every process the sessions start (test clusters' jobs, Ray's workers, examples) imports
# paddle: compiling its modules on each import costs ~8 s of CPU, from cached bytecode ~3 s.
# Some machines set PYTHONDONTWRITEBYTECODE globally; the session venvs are ours to cache in.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

ROOT = Path(__file__).parent
PACKAGES = [
    "parl-core",
    "parl-utils",
    "parl-remote",
    "parl-algos-pg",
    "parl-algos-dqn",
    "parl-algos-impala",
    "parl-algos-ac",
    "parl-algos-es",
    "parl-algos-marl",
]
EDITABLE = ["-e", "./parl-core[paddle,testing]", *[x for p in PACKAGES[1:] for x in ("-e", p)]]
PLUGIN_TEMPLATE = ROOT / "examples" / "third_party_plugin"
# Property tests (random states over their state space) and the fuzz session.
HYPOTHESIS = "hypothesis>=6.100"
SCRIPTS = ROOT / "parl-core" / "tests" / "packaging"
CI = ROOT / ".ci"
PADDLE_BUILDS = ["paddlepaddle", "paddlepaddle-gpu"]


def install_workspace(session: nox.Session, *extra: str) -> None:
    session.install(*EDITABLE, *extra)


@nox.session
def tests(session: nox.Session) -> None:
    """Run every package's test suite against editable installs of the workspace."""
    # parl-remote[ray]: the backend suite runs every remote semantic on a local Ray too.
    # parl-utils[mlflow,wandb]: the tracker sinks are tested against the real libraries;
    # [plot]: the results schema test draws a curve; [multiagent]: the particle envs (mpe2);
    # [offline]: the dataset files (h5py, minari). tensorboardX reads the TensorBoard sink's files.
    install_workspace(
        session,
        "pytest>=8",
        "pytest-xdist>=3.5",
        "tensorboardX>=2.6",
        HYPOTHESIS,
        "-e",
        "./parl-utils[atari,mlflow,multiagent,offline,plot,wandb]",
        "-e",
        "./parl-remote[ray]",
    )
    paths = session.posargs or [f"{p}/tests" for p in PACKAGES]
    skip = [] if session.posargs else [f"--ignore={BROWSER_TEST}"]  # `browser` runs it
    # No torch here: the `torch` session runs the torch-marked tests, the torch folders and
    # the families' torch-only test files (test_*_torch.py).
    skip += ["-m", "not torch", *(f"--ignore={folder}" for folder in TORCH_TEST_FOLDERS)]
    skip += [f"--ignore-glob={TORCH_TEST_FILES}"]
    # Two workers, a test file each at a time: much of the suite waits on clusters and
    # subprocesses, so a second worker fills the idle core (fixtures stay per file).
    workers = ["-n", "2", "--dist", "loadfile"]
    session.run("pytest", "--durations=15", *workers, *skip, *paths, env={"PYTHONHASHSEED": "0"})


TORCH = "torch==2.13.0"
# A local folder of wheels (a CPU build of torch) where the machine has one; elsewhere uv's
# --torch-backend cpu (PyTorch's CPU wheel index): never the multi-GB CUDA build.
LOCAL_WHEELS = Path("/opt/wheels")
TORCH_TEST_FOLDERS = ["parl-core/tests/torch"]
TORCH_TEST_FILES = "*/tests/test_*_torch.py"
GPU_TEST = "parl-core/tests/torch/test_device_gpu.py"
"""Runs only where a GPU is (``pytest`` it there); CI has none, and this session allows no skip."""
TORCH_TESTS = [
    "parl-core/tests",
    "parl-algos-dqn/tests",
    "parl-algos-pg/tests",
    "parl-algos-ac/tests",
    "parl-algos-es/tests",
    "parl-algos-impala/tests",
    "parl-algos-marl/tests",
    # parl-utils' one torch-marked file (DeviceReplayMemory on torch); the rest need no torch.
    "parl-utils/tests/test_device_replay_memory.py",
]


@nox.session
def torch(session: nox.Session) -> None:
    """The torch backend: every torch-marked test (parl-core's torch suite, the families'
    contract suites on torch, the paddle-vs-torch comparisons), with torch's CPU build next to
    paddle, then the ``>>>`` examples of the torch modules (``nox -s docs`` has no torch). Fails
    if any test is skipped, so that a missing torch cannot pass for success."""
    # [multiagent]: mpe2 for the particle-env families' torch runs; [offline]: h5py for CQL's;
    # tensorboardX: parl-utils' test conftest reads event files with it.
    install_workspace(
        session,
        "pytest>=8",
        "sybil>=9",
        HYPOTHESIS,
        "tensorboardX>=2.6",
        "-e",
        "./parl-utils[multiagent,offline]",
    )
    cpu = ["--find-links", str(LOCAL_WHEELS)] if LOCAL_WHEELS.is_dir() else []
    session.install(*(cpu or ["--torch-backend", "cpu"]), TORCH)
    report = Path(session.create_tmp()) / "torch-junit.xml"
    paths = session.posargs or [*TORCH_TESTS, f"--ignore={GPU_TEST}"]
    session.run(
        "pytest",
        "-m",
        "torch",
        "--durations=10",
        f"--junitxml={report}",
        *paths,
        env={"PYTHONHASHSEED": "0"},
    )
    suite = ElementTree.parse(report).getroot().find("testsuite")
    ran, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))  # type: ignore[union-attr]
    if ran == 0 or skipped:
        session.error(f"the torch session ran {ran} tests and skipped {skipped}: none may skip")
    if not session.posargs:
        modules = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("parl-*/src/**/torch"))
        env = {"PYTHONPATH": str(DOCS_TOOLING), "PARL_DOCS_TORCH": "1", "PYTHONHASHSEED": "0"}
        session.run("pytest", "-p", "parl_docs.runner", "-r", "fE", *modules, env=env)


BROWSER_TEST = "parl-remote/tests/test_monitor_browser.py"
BROWSER_PACKAGES = {"chromium": "chromium", "chromedriver": "chromium-driver"}


APT_ANSWER_S = 60  # how long the question before apt-get waits for an answer


def ensure_chromium(session: nox.Session) -> None:
    """Debian's chromium and chromium-driver, the one change a session makes to the system:
    installed with apt when missing and root, said first, and asked first at a terminal
    (``PARL_APT=yes`` answers yes, ``PARL_APT=no`` skips the session)."""
    missing = [pkg for exe, pkg in BROWSER_PACKAGES.items() if shutil.which(exe) is None]
    if not missing:
        return
    command = f"apt-get update && apt-get install -y {' '.join(missing)}"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        session.error(
            f"the browser test needs {' and '.join(missing)}: run `sudo {command}` "
            "(Debian/Ubuntu), then `nox -s browser` again"
        )
    session.warn(f"the browser session needs {' and '.join(missing)}: it runs `{command}` as root")
    if not _apt_agreed(session):
        session.skip(f"not installing {' and '.join(missing)}; run `{command}` to test the browser")
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", external=True, env=env)
    session.run("apt-get", "install", "-y", "-q", *missing, external=True, env=env)


def _apt_agreed(session: nox.Session) -> bool:
    """``PARL_APT`` if set; else, at a terminal, the answer to a question (no answer within
    ``APT_ANSWER_S`` s is no); else (CI) yes, as said just before."""
    choice = os.environ.get("PARL_APT", "").lower()
    if choice in ("yes", "no"):
        return choice == "yes"
    if not sys.stdin.isatty():
        return True
    print(f"Install them now? [y/N] (no answer in {APT_ANSWER_S} s: no) ", end="", flush=True)
    ready, _, _ = select.select([sys.stdin], [], [], APT_ANSWER_S)
    return bool(ready) and sys.stdin.readline().strip().lower() in ("y", "yes")


@nox.session
def browser(session: nox.Session) -> None:
    """Drive the xparl web monitor in headless Chromium (selenium); the screenshot of the page
    stays in this session's tmp dir."""
    ensure_chromium(session)
    session.install("-e", "./parl-core", "-e", "./parl-remote", "pytest>=8", "selenium>=4.20")
    shots = Path(session.create_tmp()) / "screenshots"
    env = {"PYTHONHASHSEED": "0", "MONITOR_SCREENSHOT_DIR": str(shots)}
    session.run("pytest", "-p", "no:cacheprovider", BROWSER_TEST, *session.posargs, env=env)
    session.log(f"screenshot: {shots / 'xparl-monitor.png'}")


@nox.session
def lint(session: nox.Session) -> None:
    """Check style and formatting with ruff."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """Type-check every package with mypy (by module: parl's portions live in several roots),
    and ``benchmarks`` (not installed: mypy finds it in the repository root, the session's
    working directory); then builds every algorithm config as a user's code would
    (``.ci/config_typing.py``)."""
    install_workspace(session, "mypy>=1.10")
    packages = [
        "parl",
        "parl.utils",
        "parl.env",
        "parl.remote",
        "parl_algos_pg",
        "parl_algos_dqn",
        "parl_algos_impala",
        "parl_algos_ac",
        "parl_algos_es",
        "parl_algos_marl",
        "benchmarks",
    ]
    session.run("mypy", *(arg for package in packages for arg in ("-p", package)))
    # What a user's type checker sees: every algorithm's config builds with no arguments.
    user_code = Path(session.create_tmp()) / "config_typing"
    user_code.mkdir(exist_ok=True)
    session.run("python", ".ci/config_typing.py", str(user_code / "user_configs.py"))
    session.run("mypy", str(user_code / "user_configs.py"))


def build_wheels(session: nox.Session, sources: list[Path], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.whl"):
        old.unlink()
    for source in sources:
        session.run("uv", "build", "--wheel", "--out-dir", str(out), str(source), external=True)
    return sorted(out.glob("*.whl"))


def install_wheels(session: nox.Session, out: Path, *requirements: str) -> None:
    """Install from the freshly built wheels in ``out``, replacing what a reused venv holds.

    The wheels keep their version number from build to build, so without the reinstall a
    reused venv would keep testing the previous build.
    """
    built = sorted({wheel.name.split("-")[0].replace("_", "-") for wheel in out.glob("*.whl")})
    reinstall = [arg for name in built for arg in ("--reinstall-package", name)]
    session.install("--find-links", str(out), *reinstall, *requirements)


def build_wheelhouse(session: nox.Session, out: Path) -> None:
    """Build every distribution's sdist and wheel (from the sdist) into ``out``, then check them
    as a release needs them: ``twine check`` and ``.ci/check_wheelhouse.py`` (licence, namespace
    ownership, the pins of DESIGN §1). What ``wheelhouse`` publishes and ``packaging`` tests."""
    shutil.rmtree(out, ignore_errors=True)
    session.run("uv", "build", "--all-packages", "--out-dir", str(out), external=True)
    session.install("twine>=6", "packaging>=24", "tomli>=2; python_version < '3.11'")
    built = sorted(str(p) for pattern in ("*.whl", "*.tar.gz") for p in out.glob(pattern))
    session.run("twine", "check", "--strict", *built)
    session.run("python", str(CI / "check_wheelhouse.py"), str(out))


@nox.session(default=False)
def wheelhouse(session: nox.Session) -> None:
    """Build and check every distribution into ``dist/`` (``-- DIR`` elsewhere): what the
    release workflow (``.ci/release.yml``) publishes."""
    build_wheelhouse(session, Path(session.posargs[0] if session.posargs else ROOT / "dist"))


# Kept out of the environment of the README's QuickStart command: the `ray` group brings them.
ONLY_ON_REQUEST = {"ray", "grpcio"}


def check_default_environment(session: nox.Session) -> None:
    """The README's QuickStart command (``uv run``) installs the workspace's default
    dependencies, as locked: none of ``ONLY_ON_REQUEST`` may be among them."""
    command = ["uv", "export", "--frozen", "--no-hashes", "--quiet"]
    exported = session.run(*command, external=True, silent=True) or ""
    found = {line.split("==")[0] for line in exported.splitlines()} & ONLY_ON_REQUEST
    if found:
        session.error(
            f"`uv run` would install {sorted(found)}: keep them out of the root pyproject's "
            "dependencies (the `ray` dependency group is where Ray belongs)"
        )


@nox.session
def packaging(session: nox.Session) -> None:
    """Build the wheelhouse as a release does, install every documented install line from it,
    and use the wheels as a user would.

    - the README's QuickStart command (``uv run``) installs no Ray;
    - ``.ci/tests``: the tests of the two checks below;
    - ``.ci/install_lines.py``: each distinct ``pip install`` line of the docs in a fresh venv
      from the wheelhouse (never an index for our names), then what the line promises;
    - without paddle, ``parl-algos-pg`` is listed and loading it names both paddle builds;
    - with ``parl-core[paddle]``: the README's registry snippet and the QuickStart example;
    - without ``parl-utils``: parl-core and the registry keep working.
    """
    check_default_environment(session)
    out = Path(session.create_tmp()) / "wheelhouse"
    build_wheelhouse(session, out)
    session.install("pytest>=8")
    session.run("pytest", "-p", "no:cacheprovider", "-q", str(CI / "tests"))  # the checks' own
    session.run("python", str(CI / "install_lines.py"), "--wheelhouse", str(out))
    install_wheels(session, out, "parl-core", "parl-algos-pg")
    session.run("uv", "pip", "uninstall", *PADDLE_BUILDS, external=True)  # a reused venv's
    session.run("python", str(SCRIPTS / "without_paddle.py"))
    install_wheels(session, out, "parl-core[paddle]", "parl-algos-pg")
    session.run("python", str(SCRIPTS / "user_snippet.py"))
    session.chdir(session.create_tmp())
    session.run(
        "python", str(ROOT / "examples/QuickStart/train.py"), "--max-episodes", "3", "--quiet"
    )
    session.run("uv", "pip", "uninstall", "parl-utils", external=True)
    session.run("python", str(SCRIPTS / "without_utils.py"))


@nox.session
def plugin(session: nox.Session) -> None:
    """Build the third-party plugin template into a wheel and run its tests against it."""
    out = Path(session.create_tmp()) / "wheels"
    build_wheels(session, [ROOT / "parl-core", PLUGIN_TEMPLATE], out)
    install_wheels(session, out, "parl-core[paddle,testing]", "acme-parl-bandit")
    session.install("pytest>=8")
    session.chdir(session.create_tmp())
    session.run("pytest", "-p", "no:cacheprovider", str(PLUGIN_TEMPLATE / "tests"))


OFF_POLICY_TINY = ["--total-steps", "300", "--learning-starts", "100", "--eval-every", "300"]
OFF_POLICY_TINY += ["--eval-episodes", "2", "--quiet"]
OFFLINE_TINY = ["--behaviour-steps", "1050", "--dataset-size", "300", "--total-steps", "40"]
OFFLINE_TINY += ["--hidden-sizes", "32", "32"]
OFFLINE_TINY += ["--batch-size", "64", "--policy-eval-start", "20", "--eval-every", "40"]
OFFLINE_TINY += ["--eval-episodes", "1", "--quiet"]
DT_TINY = ["examples/DT/train.py", "--build", "medium-replay", "--behaviour-steps", "1050"]
DT_TINY += ["--hidden-sizes", "32", "32", "--total-steps", "20", "--embed-dim", "16"]
DT_TINY += ["--num-layers", "1", "--context-length", "5", "--batch-size", "8"]
DT_TINY += ["--eval-every", "20", "--eval-episodes", "1", "--quiet"]
MARL_TINY = ["--total-steps", "300", "--eval-every", "150", "--eval-episodes", "2", "--quiet"]
MADDPG_TINY = ["--batch-size", "32", "--min-memory-size", "64", "--learn-every", "10"]
MAPPO_TINY = ["examples/MAPPO/train.py", *MARL_TINY, "--num-envs", "2", "--num-steps", "75"]
# QuickStart, DQN and PPO run in their families' tests (which also check what they write), and
# so does ES's offline workflow (examples/ES/evokit_offline.py).
ES_TINY = ["examples/ES/train.py", "--generations", "2", "--population-size", "8"]
ES_TINY += ["--noise-table-size", "100000", "--eval-episodes", "2", "--quiet"]
EXAMPLE_RUNS = [
    ["examples/IMPALA/train.py", "--num-actors", "2", "--total-steps", "1000"],
    # Atari in the learner's process: wrap_deepmind and the CNN, without a cluster's start-up;
    # the benchmark's settings file, with flags on top.
    [
        "examples/IMPALA/train.py",
        "--config",
        "benchmarks/configs/IMPALA-PongNoFrameskip-v4.yaml",
        "--num-actors",
        "0",
        "--envs-per-actor",
        "1",
        "--total-steps",
        "100",
    ],
    *([f"examples/{algo}/train.py", *OFF_POLICY_TINY] for algo in ("SAC", "OAC", "TD3", "DDPG")),
    # Two environments stepped together, the replay memory in paddle tensors sampled there.
    ["examples/SAC/train.py", *OFF_POLICY_TINY, "--num-envs", "2", "--replay-memory", "device"],
    # Offline: a dataset built by a briefly trained SAC (50 updates), then 40 updates of CQL
    # and of IQL on it.
    ["examples/CQL/train.py", "--build", "medium", *OFFLINE_TINY],
    ["examples/IQL/train.py", "--build", "medium-replay", *OFFLINE_TINY],
    # And the Decision Transformer from a dataset built the same way.
    DT_TINY,
    # Two remote samplers on a real embedded xparl cluster.
    ["examples/A2C/train.py", "--total-steps", "1024", "--eval-every", "1024", "--quiet"],
    # The learner as an actor of its own (a CPU one: the embedded cluster offers no GPU).
    [
        "examples/GPU_Learner/train.py",
        *("--total-steps", "1024", "--num-steps", "32", "--eval-every", "1024", "--quiet"),
    ],
    # simple_spread (mpe2; MADDPG also continuous): a few learn steps, two evaluations.
    ["examples/MADDPG/train.py", *MARL_TINY, *MADDPG_TINY],
    ["examples/MADDPG/train.py", *MARL_TINY, *MADDPG_TINY, "--continuous-actions"],
    ["examples/QMIX/train.py", *MARL_TINY, "--batch-episodes", "4"],
    # COMA also on simple_speaker_listener: agents of different sizes share the policy.
    ["examples/COMA/train.py", *MARL_TINY, "--batch-episodes", "2"],
    [
        "examples/COMA/train.py",
        *MARL_TINY,
        "--batch-episodes",
        "2",
        "--env-id",
        "simple_speaker_listener",
    ],
    MAPPO_TINY,
    # Two remote rollout actors on a real embedded xparl cluster.
    [*MAPPO_TINY, "--num-actors", "2"],
    # Two remote evaluation actors; CMA-ES and GA through the same interface, in one process.
    [*ES_TINY, "--num-actors", "2"],
    [*ES_TINY, "--algo", "CMAES", "--num-actors", "0"],
    [*ES_TINY, "--algo", "GA", "--parents", "2", "--num-actors", "0"],
]


# The remote-actor examples again on Ray: `--address ray` (a local Ray of the example's own) in
# `examples`, `--address ray://...` (a Ray head, through the Ray client) in `ray_examples`.
RAY_EXAMPLE_RUNS = [
    ["examples/IMPALA/train.py", "--num-actors", "2", "--total-steps", "1000"],
    ["examples/A2C/train.py", "--total-steps", "1024", "--eval-every", "1024", "--quiet"],
    [*ES_TINY, "--num-actors", "2"],
    [*MAPPO_TINY, "--num-actors", "2"],
]
# Ray on 127.0.0.1 only, and no usage reports.
RAY_LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}


@nox.session
def examples(session: nox.Session) -> None:
    """Run the examples that no package test runs, end to end with a tiny budget; those with
    remote actors also on a local Ray."""
    utils = "./parl-utils[atari,multiagent,offline]"
    install_workspace(session, "-e", utils, "-e", "./parl-remote[ray]")
    logdir = Path(session.create_tmp()) / "runs"
    for run in EXAMPLE_RUNS:
        session.run("python", *run, "--logdir", str(logdir / Path(run[0]).parent.name))
    # Ray's files go outside the session's venv: under nox's TMPDIR (the venv's tmp/) its
    # workers die at start (parl.connect("ray") refuses that temp dir with a clear error).
    ray_tmp = tempfile.mkdtemp(prefix="parl-ray-")
    env = {**RAY_LOOPBACK, "TMPDIR": ray_tmp}
    try:
        for run in RAY_EXAMPLE_RUNS:
            logs = str(logdir / f"{Path(run[0]).parent.name}-ray")
            session.run("python", *run, "--address", "ray", "--logdir", logs, env=env)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


@nox.session
def ray_examples(session: nox.Session) -> None:
    """Opt-in: the examples with remote actors on a Ray head, through ``--address ray://...``.

    Not in the default set yet: after other examples had run, the Ray client server failed to
    start its per-client server in 2 of 4 runs here (cause not found; see issue #12).
    """
    install_workspace(session, "-e", "./parl-remote[ray]")
    logdir = Path(session.create_tmp()) / "runs"
    with ray_head(session) as (address, env):
        for run in RAY_EXAMPLE_RUNS:
            name = Path(run[0]).parent.name
            logs = str(logdir / f"{name}-ray")
            session.run("python", *run, "--address", address, "--logdir", logs, env=env)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def ray_head(
    session: nox.Session, start_timeout: float = 180.0
) -> Iterator[tuple[str, dict[str, str]]]:
    """A Ray head on 127.0.0.1 with a client server, in its own process group, requiring a token
    of its own (Ray's token authentication); yields its ``ray://`` address and the environment
    a client needs, and ends the group (by its pid) afterwards."""
    port = _free_port()
    # Short and absolute: Ray's unix sockets live under it (a path of at most 107 bytes).
    temp = Path(tempfile.mkdtemp(prefix="parl-ray-"))
    token = temp / "auth_token"
    token.touch(mode=0o600)
    token.write_text(secrets.token_hex(32))
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    command = [str(Path(session.bin) / "ray"), "start", "--head", "--block", "--port=0"]
    command += ["--node-ip-address=127.0.0.1", f"--ray-client-server-port={port}"]
    command += ["--num-cpus=4", "--include-dashboard=false", "--disable-usage-stats"]
    command += [f"--temp-dir={temp}"]
    head = subprocess.Popen(
        command, env={**os.environ, **RAY_LOOPBACK, **auth}, start_new_session=True
    )
    try:
        deadline = time.monotonic() + start_timeout
        while not _listening(port):
            if head.poll() is not None or time.monotonic() > deadline:
                session.error(f"the Ray head did not serve clients on port {port} (see above)")
            time.sleep(0.5)
        yield f"ray://127.0.0.1:{port}", auth
    finally:
        # `ray start --block` leaves some of its processes behind on SIGTERM: the group goes.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


DOCS_TOOLING = ROOT / "docs" / "_ext"


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site (warnings and broken internal links fail it), then run every code block.

    Every block of the pages and every ``>>>`` example of the packages' docstrings runs (see
    docs/development/docs.md); ``nox -s docs -- PATH...`` runs only those files' blocks.
    """
    # parl-utils[mlflow,wandb]: the hooks guide runs both tracker sinks and reads them back;
    # [multiagent]: the multi-agent pages and parl.env.multiagent_env's examples step mpe2 envs;
    # [offline]: parl.utils.offline's examples write and read dataset files.
    utils = "./parl-utils[mlflow,multiagent,offline,wandb]"
    install_workspace(session, "-e", utils, "-r", "docs/requirements.txt")
    out = Path(session.create_tmp()) / "html"
    session.run("sphinx-build", "-W", "--keep-going", "-q", "-b", "html", "docs", str(out))
    sources = [f"{p}/src" for p in PACKAGES]
    blocks = session.posargs or ["docs", *sources]
    env = {"PYTHONPATH": str(DOCS_TOOLING), "PYTHONHASHSEED": "0"}
    # Two workers, a page each at a time: its blocks still run in order in one namespace.
    workers = ["-n", "2", "--dist", "loadfile"]
    session.run(
        "pytest", "-p", "parl_docs.runner", "-r", "fE", "--durations=12", *workers, *blocks, env=env
    )


@nox.session(default=False)
def port_fidelity(session: nox.Session) -> None:
    """PARL 2.2.1's examples and torch benchmark programs, copied from a local PARL clone and
    run each on a tiny budget with only its listed edits; prints the table of results:
    ``nox -s port_fidelity -- --parl PATH [--only FOLDER ...] [--timeout 60]``. Nothing is
    fetched but the packages installed here (see docs/development/port-fidelity.md)."""
    if not any(arg.startswith("--parl") for arg in session.posargs):
        session.error("name a local PARL clone: nox -s port_fidelity -- --parl PATH")
    # The programs' envs: Atari (ale-py, OpenCV), MuJoCo, the particle envs; torch beside paddle.
    utils = "./parl-utils[atari,multiagent,offline]"
    install_workspace(session, "-e", utils, "-e", "./parl-algos-ac[mujoco]")
    local = ["--find-links", str(LOCAL_WHEELS)] if LOCAL_WHEELS.is_dir() else []
    session.install(*local, TORCH)
    session.run("python", str(CI / "port_fidelity" / "run.py"), *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Run a benchmark: ``nox -s bench -- <ALGO> <ENV> [--seeds 0 1 2]`` (see benchmarks/)."""
    # parl-algos-ac[mujoco]: the SAC/TD3/DDPG HalfCheetah-v5 benchmarks; [multiagent]: mpe2;
    # [offline]: CQL, IQL, BC, DT.
    utils = "./parl-utils[atari,multiagent,offline,plot]"
    install_workspace(session, "-e", utils, "-e", "./parl-algos-ac[mujoco]")
    session.run("python", "-m", "benchmarks.run", *session.posargs, env={"PYTHONHASHSEED": "0"})


FUZZ_TIMEOUT_S = 1200


@nox.session(default=False)
def fuzz(session: nox.Session) -> None:
    """Throw hypothesis-damaged files at every loader (``fuzz/``): checkpoints and weights of
    both backends, PARL 2.x pickles, ES solver files, noise-table segments, replay memories,
    D4RL HDF5 and Minari datasets, benchmark results. ``PARL_FUZZ_EXAMPLES`` files per loader
    (100 by default); the run is stopped after 20 minutes, which fails the session."""
    install_workspace(session, "pytest>=8", HYPOTHESIS, "-e", "./parl-utils[offline,plot]")
    local = ["--find-links", str(LOCAL_WHEELS)] if LOCAL_WHEELS.is_dir() else []
    session.install(*local, TORCH)
    session.run(
        "timeout", str(FUZZ_TIMEOUT_S), "pytest", "-p", "no:cacheprovider", "--durations=0",
        "fuzz", *session.posargs, external=True, env={"PYTHONHASHSEED": "0"},
    )  # fmt: skip
