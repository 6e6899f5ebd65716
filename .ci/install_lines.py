"""Check that every documented install line works for someone who has only this repository.

Every ``pip install`` line in a shell block or an inline code span of a tracked ``.md`` or
``.rst`` file is installed, once per distinct line, into a fresh virtualenv; then what the line
promises (``PROMISES`` below) is imported or run there. Our own distributions come from the
wheelhouse only, never from an index:

- a line that names them by folder (``./parl-core``) sees only the wheels of the folders it names,
  as pip does in a clone (none of them is on an index);
- a line whose comment says ``once published`` shows the index form: it sees the whole
  wheelhouse, as the index will hold every distribution;
- a line whose comment says ``after paddle's GPU build`` must install no paddle build; its
  promises are checked with the CPU build standing in for the GPU one;
- a line that installs torch's CPU build (``pip install torch --index-url "$TORCH_CPU_INDEX"``,
  or ``uv pip install torch --torch-backend cpu``), and a line with a ``[torch]`` extra, which
  the docs put after it: torch's CPU build goes in first, as its own command, from a CPU wheel
  in ``/opt/wheels`` where the machine has one, else from ``$TORCH_CPU_INDEX`` if set, else
  through uv's ``--torch-backend cpu``; then the line, after which torch must still be the CPU
  build (no CUDA);
- after each install, every distribution of ours in the environment must be file for file the
  wheel of the wheelhouse (RECORD hashes), so none came from an index.

Each result says what was checked, and how large the environment came out: a "once published"
line passes here from the wheelhouse although, until PARL is on an index, a user running it
gets "No matching distribution".

Usage (``nox -s packaging`` runs it): ``python .ci/install_lines.py --wheelhouse DIR``;
``--list`` only prints the distinct lines and where they are.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


def family(*algorithms: str) -> str:
    """What installing an algorithm family promises: its algorithms load through the registry."""
    return f"from parl.algorithms import {', '.join(algorithms)}"


# What installing each distribution, or one of its extras, promises: Python code (a str) run in
# the fresh environment, or a command (a tuple) run from its bin/. A line naming something that
# is not here fails: add it here, with the check that shows the line did its job.
PROMISES: dict[str, list[str | tuple[str, ...]]] = {
    "parl-core": ["import parl; parl.algorithms.names()"],
    "parl-core[paddle]": ["import parl; parl.Model, parl.Agent, parl.set_seed"],
    "parl-core[testing]": ["import parl.testing; parl.testing.IdentityEnv"],
    "parl-core[torch]": [
        "import parl; assert parl.get_backend() == 'torch', parl.get_backend()",
        "from parl.core.torch import Agent, Algorithm, Model; import parl; parl.Model is Model",
    ],
    "parl-utils": ["import parl.utils, parl.env; parl.utils.ReplayMemory, parl.utils.evaluate"],
    "parl-utils[mlflow]": ["import mlflow, sqlalchemy, alembic; from mlflow import MlflowClient"],
    "parl-utils[wandb]": ["import wandb"],
    "parl-utils[multiagent]": [
        "from parl.env.multiagent_env import MAenv; MAenv('simple_spread').close()"
    ],
    "parl-utils[offline]": ["import h5py, minari; from parl.utils.offline import load_d4rl_hdf5"],
    "parl-utils[envpool]": [
        "from parl.utils import make_vector_env; "
        "make_vector_env('CartPole-v1', 2, engine='envpool', seed=0).close()"
    ],
    "parl-utils[plot]": ["import matplotlib; from parl.utils.results import plot_curves"],
    "parl-utils[atari]": [
        "import gymnasium, parl.env.atari_wrappers; gymnasium.make('PongNoFrameskip-v4').close()"
    ],
    "parl-remote": ["import parl; parl.remote_class, parl.connect", ("xparl", "--version")],
    "parl-remote[ray]": ["import ray, parl.remote.backends.ray"],
    "parl-algos-pg": [family("PolicyGradient", "PPO")],
    "parl-algos-pg[torch]": ["import parl; parl.algorithms.get('PPO', backend='torch')"],
    "parl-algos-dqn": [family("DQN", "DDQN")],
    "parl-algos-dqn[torch]": [
        "import parl; assert parl.algorithms.names(backend='torch') == ['DDQN', 'DQN']",
        "import parl; parl.algorithms.get('DDQN', backend='torch')",
    ],
    "parl-algos-ac": [family("A2C", "DDPG", "TD3", "SAC", "OAC", "CQL", "IQL", "DT")],
    "parl-algos-ac[torch]": ["import parl; parl.algorithms.get('SAC', backend='torch')"],
    "parl-algos-ac[offline]": ["import h5py, minari; from parl.utils.offline import load_minari"],
    "parl-algos-ac[mujoco]": ["import gymnasium; gymnasium.make('HalfCheetah-v5').close()"],
    "parl-algos-impala": [family("IMPALA")],
    "parl-algos-impala[torch]": ["import parl; parl.algorithms.get('IMPALA', backend='torch')"],
    "parl-algos-es": [family("ES", "CMAES", "GA")],
    "parl-algos-marl": [family("MADDPG", "QMIX", "MAPPO", "COMA")],
    "parl-algos-marl[torch]": [
        "import parl; parl.algorithms.get('MADDPG', backend='torch')",
        "import parl; parl.algorithms.get('MAPPO', backend='torch')",
    ],
    "parl-algos-marl[mpe]": [
        "from parl.env.multiagent_env import MAenv; MAenv('simple_spread').close()"
    ],
    "parl-algos-marl[remote]": [
        "import parl; from parl_algos_marl.rollout import Rollouts; parl.remote_class, parl.connect"
    ],
    "parl-algos-es[mujoco]": ["import gymnasium; gymnasium.make('HalfCheetah-v5').close()"],
    "acme-parl-bandit": [family("ContextualBandit")],
    "paddlepaddle": ["import paddle"],
    "torch": ["import torch; torch.ones(2) @ torch.ones(2)"],
    "pytest": [("pytest", "--version")],
    "tensorboard": [("tensorboard", "--version_tb")],
    "uv": [("uv", "--version")],
    "nox": [("nox", "--version")],
}

# Folders an install line names that are not in this repository: the page has the reader write
# them. Such a line is listed as not checked, with the reason.
READERS_OWN = {"./my-parl-dqn": "the reader's own package, written on that page"}

# pip's options the lines may use, and whether each takes a value.
OPTIONS = {
    "-e": True,
    "--editable": True,
    "-q": False,
    "--quiet": False,
    "-U": False,
    "--upgrade": False,
    "--force-reinstall": False,
    "--no-deps": False,
    "--index-url": True,
    "--torch-backend": True,
}
# The one value each of these options may have: they pick torch's CPU build, and nothing else.
CPU_TORCH_OPTIONS = {"--index-url": "$TORCH_CPU_INDEX", "--torch-backend": "cpu"}
CPU_TORCH_CHECK = (
    "import torch; assert torch.version.cuda is None, "
    "f'torch {torch.__version__} is a CUDA build: the CPU build was replaced'"
)
# The marks a line's comment may carry (compared in lower case); see the module docstring.
PUBLISHED_MARK = "once published"
GPU_MARK = "after paddle's gpu build"
LOCAL_WHEELS = Path("/opt/wheels")
SHELL_FENCES = {"bash", "sh", "shell", "console"}
INSTALLERS = (("pip", "install"), ("pip3", "install"), ("uv", "pip", "install"))
SEPARATORS = {"&&", "||", ";", "|"}
WORKERS = 2


class LineError(ValueError):
    """A documented install line that cannot be checked as written; the message says why."""


@dataclass(frozen=True)
class Wanted:
    """One requirement of an install line: a distribution, its extras, and how it is named."""

    name: str
    extras: frozenset[str]
    specifier: str = ""
    folder: str | None = None  # the folder it is installed from, when named by one

    def install_arg(self) -> str:
        extras = f"[{','.join(sorted(self.extras))}]" if self.extras else ""
        return f"{self.name}{extras}{self.specifier}"

    def promise_keys(self, paddle: bool = True) -> list[str]:
        """The PROMISES keys of this requirement. Without paddle in the line, a family's
        ``[torch]`` extra promises its torch classes only: its plain name promises paddle's."""
        base = [] if "torch" in self.extras and not paddle else [self.name]
        return [*base, *(f"{self.name}[{extra}]" for extra in sorted(self.extras))]


@dataclass(frozen=True)
class InstallLine:
    """What a documented line asks for, as the check runs it (identical lines count once)."""

    wanted: tuple[Wanted, ...]
    published: bool
    no_deps: bool
    after_gpu_paddle: bool
    cpu_torch: bool = False  # installs torch's CPU build itself (--index-url/--torch-backend)

    def needs_torch(self) -> bool:
        """Whether the line installs torch, or comes after the line that installs its CPU
        build (a ``[torch]`` extra)."""
        return self.cpu_torch or any("torch" in w.extras for w in self.wanted)

    def how_checked(self) -> str:
        """What the check installed the line from, in a few words."""
        said = []
        if self.published:
            said.append(
                "as published: the whole wheelhouse stood in for the index, where PARL is not "
                "yet (today this line fails with 'No matching distribution')"
            )
        elif any(w.folder for w in self.wanted):
            said.append("our distributions from the wheels of the folders it names")
        if self.needs_torch():
            said.append(f"torch's CPU build first, from {describe(cpu_torch_source())}")
        if self.after_gpu_paddle:
            said.append("paddle's CPU build stood in for its GPU build")
        return "; ".join(said)


@dataclass(frozen=True)
class Seen:
    """Where a line was found, as written there."""

    where: str
    text: str


def documents(root: Path) -> list[Path]:
    """The tracked Markdown and reStructuredText files of the repository at ``root``."""
    listed = subprocess.run(
        ["git", "ls-files", "*.md", "*.rst"], cwd=root, check=True, capture_output=True, text=True
    )
    return [root / name for name in listed.stdout.split()]


def shell_snippets(text: str) -> Iterator[tuple[int, str]]:
    """(line number, shell text) of every shell-block line and inline code span of a page.

    Shell blocks are Markdown fences (```` ```bash ````, ```` ```{code-block} bash ````) and
    reStructuredText ``.. code-block:: bash``; a backslash continues a line. The text of other
    MyST directives (notes, ``eval-rst``) is prose: its inline code spans count.
    """
    fence, mode, indented = "", "prose", False  # mode: prose, shell, or other (code not run)
    pending: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        opening = re.match(r"(`{3,})\s*(\{[\w-]+\})?\s*([\w-]*)", stripped)
        if opening and (not fence or stripped == fence):
            fence, directive, language = ("", None, "") if fence else opening.groups()
            code = directive in (None, "{code-block}", "{code}")
            mode = "prose" if not fence or not code else block_mode(language)
            continue
        rst_block = re.match(r"\.\. code-block::\s*(\w+)", stripped)
        if rst_block:
            mode, indented = block_mode(rst_block.group(1)), True
            continue
        if indented and stripped and not line[0].isspace():
            mode, indented = "prose", False
        if mode == "shell":
            if stripped:
                pending.append(stripped.removeprefix("$ ").removesuffix("\\").strip())
            if pending and not stripped.endswith("\\"):
                yield number, " ".join(pending)
                pending = []
        elif mode == "prose":
            for span in re.findall(r"`+([^`]+)`+", line):
                yield number, span


def block_mode(language: str) -> str:
    return "shell" if language.lower() in SHELL_FENCES else "other"


def install_commands(snippet: str) -> Iterator[tuple[list[str], str]]:
    """The pip-install commands in a shell snippet: (arguments after ``install``, comment)."""
    command, _, comment = split_comment(snippet)
    try:
        words = shlex.split(command)
    except ValueError:
        return  # prose in backquotes, not a command
    start = 0
    for end in [*(i for i, word in enumerate(words) if word in SEPARATORS), len(words)]:
        part = words[start:end]
        start = end + 1
        if part[:3] in (["python", "-m", "pip"], ["python3", "-m", "pip"]):
            part = part[2:]
        for installer in INSTALLERS:
            if tuple(part[: len(installer)]) == installer:
                yield part[len(installer) :], comment


def split_comment(snippet: str) -> tuple[str, str, str]:
    """Split a shell line at its first ``#`` outside quotes that starts a word."""
    quote = ""
    for index, char in enumerate(snippet):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or snippet[index - 1].isspace()):
            return snippet[:index], "#", snippet[index + 1 :]
    return snippet, "", ""


def parse(arguments: list[str], comment: str, root: Path, ours: set[str]) -> InstallLine | str:
    """The line's requirements, or the reason it is not checked; :class:`LineError` if wrong."""
    wanted: list[Wanted] = []
    no_deps = cpu_torch = False
    words = iter(arguments)
    for word in words:
        if word.startswith("-"):
            if word not in OPTIONS:
                raise LineError(
                    f"pip option {word} is not one the check knows: use one of "
                    f"{', '.join(OPTIONS)}, or teach OPTIONS in .ci/install_lines.py"
                )
            no_deps = no_deps or word == "--no-deps"
            if word in CPU_TORCH_OPTIONS:
                cpu_torch = check_cpu_torch_option(word, next(words, ""))
                continue
            if OPTIONS[word]:
                word = next(words, "")
            else:
                continue
        if word in READERS_OWN:
            return READERS_OWN[word]
        wanted.append(requirement(word, root))
    published = PUBLISHED_MARK in comment.lower()
    for item in wanted:
        if item.name in ours and item.folder is None and not published:
            raise LineError(
                f"names {item.name} by name, but no index has it yet: install it from its "
                f'folder (./{item.name}), or end the line with "# {PUBLISHED_MARK}" if it '
                "shows the index form"
            )
    gpu = GPU_MARK in comment.lower()
    if cpu_torch and [w.name for w in wanted] != ["torch"]:
        raise LineError(
            "a line that picks torch's CPU build must install torch alone: other packages "
            "would come from that index too"
        )
    return InstallLine(tuple(sorted(wanted, key=repr)), published, no_deps, gpu, cpu_torch)


def check_cpu_torch_option(option: str, value: str) -> bool:
    """An option that picks torch's build must pick the CPU one, in the one way the docs use."""
    if value != CPU_TORCH_OPTIONS[option]:
        raise LineError(
            f"{option} {value!r}: the docs use {option} only for torch's CPU build, as "
            f"{option} {CPU_TORCH_OPTIONS[option]} (no index address in the docs)"
        )
    return True


def requirement(word: str, root: Path) -> Wanted:
    """A distribution named by folder (``./parl-core[paddle]``) or by requirement string."""
    if word.startswith((".", "/")):
        folder, _, extras = word.partition("[")
        project = (root / folder) / "pyproject.toml"
        if not project.is_file():
            raise LineError(f"{folder} is not a folder of this repository with a pyproject.toml")
        name = canonicalize_name(tomllib.loads(project.read_text())["project"]["name"])
        chosen = frozenset(e.strip() for e in extras.rstrip("]").split(",") if e.strip())
        return Wanted(name, chosen, folder=folder.rstrip("/"))
    try:
        parsed = Requirement(word)
    except InvalidRequirement as exc:
        raise LineError(f"{word!r} is neither a folder nor a requirement: {exc}") from None
    return Wanted(canonicalize_name(parsed.name), frozenset(parsed.extras), str(parsed.specifier))


def promises(line: InstallLine) -> list[str | tuple[str, ...]]:
    """Every check the line's requirements promise, in order, each once."""
    checks: list[str | tuple[str, ...]] = []
    paddle = line.after_gpu_paddle or any(
        item.name == "parl-core" and "paddle" in item.extras for item in line.wanted
    )
    for item in line.wanted:
        for key in item.promise_keys(paddle):
            if key not in PROMISES:
                raise LineError(
                    f"installs {key}, which PROMISES in .ci/install_lines.py does not know: "
                    "add what installing it promises there"
                )
            checks += [check for check in PROMISES[key] if check not in checks]
    if line.needs_torch():
        checks.append(CPU_TORCH_CHECK)
    return checks


def collect(root: Path, ours: set[str]) -> tuple[dict[InstallLine, list[Seen]], list[str]]:
    """The distinct install lines of the docs, where each is, and the problems found."""
    lines: dict[InstallLine, list[Seen]] = {}
    problems: list[str] = []
    for page in documents(root):
        for number, snippet in shell_snippets(page.read_text()):
            for arguments, comment in install_commands(snippet):
                if all(word.startswith("-") for word in arguments):
                    continue  # `pip install -e` mentioned in prose, not a command
                seen = Seen(f"{page.relative_to(root)}:{number}", snippet)
                try:
                    line = parse(arguments, comment, root, ours)
                    if isinstance(line, InstallLine):
                        promises(line)
                        lines.setdefault(line, []).append(seen)
                    else:
                        print(f"not checked: {seen.where}: {seen.text}  ({line})")
                except LineError as exc:
                    problems.append(f"{seen.where}: `{seen.text}`: {exc}")
    return lines, problems


def wheels_by_name(folder: Path) -> dict[str, Path]:
    return {str(parse_wheel_filename(w.name)[0]): w for w in sorted(folder.glob("*.whl"))}


def build_other_folders(
    lines: dict[InstallLine, list[Seen]], root: Path, out: Path, ours: set[str]
) -> dict[str, Path]:
    """Wheels of the folders the lines name that the wheelhouse lacks (the plugin template)."""
    folders = {w.folder for line in lines for w in line.wanted if w.folder and w.name not in ours}
    for folder in sorted(f for f in folders if f is not None):
        run(["uv", "build", "--wheel", "--quiet", "--out-dir", str(out), str(root / folder)])
    return wheels_by_name(out)


def check_line(line: InstallLine, wheels: dict[str, Path], scratch: Path) -> int:
    """Install one line into a fresh virtualenv and check what it promises; raise on failure,
    else return the environment's size in bytes.

    Every line's venv has the same path and byte code goes to one cache outside it: the files
    are uv's hard links, so the byte code compiled for one line serves the next (about a second
    of paddle's import a line), while each venv starts empty.
    """
    venv, links = scratch / "venv", scratch / "links"
    for old in (venv, links):
        shutil.rmtree(old, ignore_errors=True)
    links.mkdir(parents=True)
    named = [wheels[w.name] for w in line.wanted if w.folder]
    for wheel in wheels.values() if line.published else named:
        os.link(wheel, links / wheel.name)
    run(["uv", "venv", "--quiet", "--python", sys.executable, str(venv)])
    install = ["uv", "pip", "install", "--quiet", "--python", str(venv), "--find-links", str(links)]
    arguments = [w.install_arg() for w in line.wanted]
    if line.needs_torch():  # the docs' first command: torch's CPU build
        run([*install, *cpu_torch_source()])
    run([*install, *arguments])
    if line.no_deps:  # a repair command: it runs over an environment that has the rest
        run([*install, "--reinstall", "--no-deps", *arguments])
    missing = {w.name for w in line.wanted} - check_from_wheelhouse(venv, wheels)
    if missing & wheels.keys():
        raise RuntimeError(f"the line did not install {sorted(missing & wheels.keys())}")
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    env.pop("PYTHONPATH", None)
    if line.after_gpu_paddle:
        run([str(venv / "bin" / "python"), "-c", NO_PADDLE], cwd=scratch, env=env)
        run([*install, "paddlepaddle"])  # stands in for the GPU build: the same module
    code = [check for check in promises(line) if isinstance(check, str)]
    run([str(venv / "bin" / "python"), "-c", RUN_CHECKS, json.dumps(code)], cwd=scratch, env=env)
    for command in (check for check in promises(line) if isinstance(check, tuple)):
        run([str(venv / "bin" / command[0]), *command[1:]], cwd=scratch, env=env)
    return size_of(venv)


def cpu_torch_source() -> list[str]:
    """The arguments of ``uv pip install`` that give torch's CPU build: a local CPU wheel where
    the machine has one, else ``$TORCH_CPU_INDEX`` (PyTorch's CPU wheel index) if set, else
    uv's ``--torch-backend cpu`` (uv knows that index)."""
    local = sorted(LOCAL_WHEELS.glob("torch-*+cpu-*.whl")) if LOCAL_WHEELS.is_dir() else []
    if local:
        return [str(local[-1])]
    index = os.environ.get("TORCH_CPU_INDEX")
    return ["torch", "--index-url", index] if index else ["torch", "--torch-backend", "cpu"]


def describe(source: list[str]) -> str:
    """Where :func:`cpu_torch_source` takes torch from, in words."""
    if source[0] != "torch":
        return f"the local wheel {Path(source[0]).name}"
    return "$TORCH_CPU_INDEX" if source[1] == "--index-url" else "uv's --torch-backend cpu"


def size_of(folder: Path) -> int:
    """Bytes of the files under ``folder`` (what a copy of the environment takes)."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


NO_PADDLE = """
import importlib.util, sys
if importlib.util.find_spec("paddle"):
    sys.exit("this line installs a paddle build: on a GPU it would sit beside paddlepaddle-gpu")
"""
RUN_CHECKS = """
import json, sys, traceback
failed = 0
for code in json.loads(sys.argv[1]):
    try:
        exec(code, {})
    except Exception:
        failed += 1
        print("this check failed:", code, sep="\\n", file=sys.stderr)
        traceback.print_exc()
sys.exit(failed)
"""


def check_from_wheelhouse(venv: Path, wheels: dict[str, Path]) -> set[str]:
    """Every distribution of ours in ``venv`` holds exactly the files of our wheel; return
    their names."""
    checked: set[str] = set()
    for record in venv.glob("lib/python*/site-packages/*.dist-info/RECORD"):
        name = str(canonicalize_name(record.parent.name.partition("-")[0]))
        if name not in wheels:
            continue
        checked.add(name)
        with zipfile.ZipFile(wheels[name]) as wheel:
            inside = next(n for n in wheel.namelist() if n.endswith(".dist-info/RECORD"))
            expected = file_hashes(wheel.read(inside).decode())
        installed = file_hashes(record.read_text())
        differing = sorted(p for p, h in expected.items() if installed.get(p) != h)
        if differing:
            raise RuntimeError(
                f"{name} in the environment is not the wheelhouse's {wheels[name].name} "
                f"(it came from somewhere else): {', '.join(differing[:5])} differ"
            )
    return checked


def file_hashes(record: str) -> dict[str, str]:
    """path -> hash of a RECORD's files, leaving out the metadata folder (rewritten by
    installers)."""
    rows = csv.reader(record.splitlines())
    return {row[0]: row[1] for row in rows if row and ".dist-info/" not in row[0]}


def run(command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    """Run a step of a check; its output is shown only when it fails."""
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        shown = " ".join(command) if len(command) < 12 else " ".join(command[:3]) + " ..."
        raise RuntimeError(f"{shown} exited {done.returncode}:\n{done.stdout}{done.stderr}")


def check_all(lines: dict[InstallLine, list[Seen]], wheels: dict[str, Path], scratch: Path) -> int:
    """Check every line, two at a time (each waits on the network and on one core in turns);
    print each result as it comes; return how many failed."""
    slots: queue.Queue[Path] = queue.Queue()
    for slot in range(WORKERS):
        slots.put(scratch / f"slot{slot}")

    def check(line: InstallLine) -> tuple[float, int | Exception]:
        slot, started = slots.get(), time.monotonic()
        try:
            size: int | Exception = check_line(line, wheels, slot)
        except RuntimeError as exc:
            size = exc
        finally:
            slots.put(slot)
        return time.monotonic() - started, size

    failed = 0
    with ThreadPoolExecutor(WORKERS) as pool:
        results = zip(pool.map(check, lines), lines.items(), strict=True)
        for index, ((seconds, outcome), (line, places)) in enumerate(results):
            print(f"[{index + 1}/{len(lines)}] {places[0].text}")
            print(f"    in {', '.join(place.where for place in places)}")
            print(f"    checked: {line.how_checked()}")
            if isinstance(outcome, Exception):
                print(f"    FAILED: {outcome}", flush=True)
                failed += 1
            else:
                print(
                    f"    ok in {seconds:.1f} s; environment {outcome / 2**30:.2f} GiB", flush=True
                )
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheelhouse", type=Path, required=True, help="our built wheels")
    parser.add_argument("--root", type=Path, default=Path(__file__).parent.parent)
    parser.add_argument("--list", action="store_true", help="list the lines, install nothing")
    args = parser.parse_args()
    wheels = wheels_by_name(args.wheelhouse)
    if not wheels:
        parser.error(f"no wheels in {args.wheelhouse}: build them first (nox -s packaging)")
    lines, problems = collect(args.root, set(wheels))
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    seen = sum(len(places) for places in lines.values())
    print(f"{len(lines)} distinct install lines ({seen} in the docs)")
    if args.list:
        for places in lines.values():
            print(f"{places[0].text}\n    in {', '.join(place.where for place in places)}")
        return 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="install-lines-") as temp:
        scratch = Path(temp)
        wheels |= build_other_folders(lines, args.root, scratch / "others", set(wheels))
        failed = check_all(lines, wheels, scratch)
    seconds = time.monotonic() - started
    print(f"{len(lines) - failed} of {len(lines)} install lines ok, in {seconds:.0f} s")
    published = sum(line.published for line in lines)
    if published:
        print(
            f"{published} of them are 'once published' lines, checked from the wheelhouse as "
            "an index will serve it: until PARL is published they fail for a user"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
