"""Port fidelity: PARL 2.2.1's own programs, copied as a user would, run on this project.

Each program of :data:`programs.PROGRAMS` is copied from a local PARL clone (a work tree or a
git directory; nothing is fetched), gets ``import gym`` → ``import gymnasium as gym`` and the
edits listed for it (each with its reason: *port* edits are the unavoidable ones a user makes,
*budget* edits only shrink the run or point it at the local cluster), and runs under its
backend's ``PARL_BACKEND`` until it exits or its time is up. The table says, per program, how
far it got. Programs of distributed examples get an xparl cluster on 127.0.0.1, started
without ``PARL_BACKEND`` (each actor takes its client's).

Usage (``nox -s port_fidelity -- --parl PATH`` installs what the programs need first)::

    python .ci/port_fidelity/run.py --parl ~/src/PARL [--only examples/DQN ...] [--timeout 60]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from programs import PARL_COMMIT, PROGRAMS, Edit, Program

GYM_IMPORT = (re.compile(r"^(\s*)import gym\s*$", re.M), r"\1import gymnasium as gym")
GYM_FROM = (re.compile(r"^(\s*)from gym(\.| import)", re.M), r"\1from gymnasium\2")
ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*)$", re.M)
MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
MAX_FILE_BYTES = 2 * 2**20


class EditError(Exception):
    """An edit of the list no longer matches PARL's source."""


class Source:
    """PARL's files at :data:`PARL_COMMIT`, from a work tree or a git directory."""

    def __init__(self, path: Path) -> None:
        self.path = path.expanduser().resolve()
        self.git_dir = self._git_dir()
        if self.git_dir is None and not (self.path / "parl").is_dir():
            raise SystemExit(f"--parl {path}: neither a PARL work tree nor a git directory")
        if self.git_dir is not None:
            head = self._git("rev-parse", f"{PARL_COMMIT}^{{commit}}").strip()
            if head != PARL_COMMIT:
                raise SystemExit(f"--parl {path}: commit {PARL_COMMIT} (PARL 2.2.1) not found")

    def _git_dir(self) -> Path | None:
        for candidate in (self.path, self.path / ".git"):
            if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
                return candidate
        return None

    def _git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", *args], capture_output=True, text=True, timeout=60
        )
        if done.returncode:
            raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def copy(self, folder: str, dest: Path) -> None:
        """Copy ``folder``'s files (each under :data:`MAX_FILE_BYTES`) into ``dest``."""
        if self.git_dir is None:
            shutil.copytree(self.path / folder, dest)
            return
        listing = self._git("ls-tree", "-r", "-l", PARL_COMMIT, f"{folder}/")
        for line in listing.splitlines():
            meta, name = line.split("\t", 1)
            size = meta.split()[3]
            if size == "-" or int(size) > MAX_FILE_BYTES:
                continue
            blob = subprocess.run(
                ["git", f"--git-dir={self.git_dir}", "show", f"{PARL_COMMIT}:{name}"],
                capture_output=True,
                timeout=60,
            )
            if blob.returncode:  # a large file the clone keeps outside git (LFS)
                continue
            target = dest / Path(name).relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.stdout)


def apply_edits(folder: Path, edits: tuple[Edit, ...], xparl: str | None) -> None:
    """The gym import in every file, then the program's own edits (each must apply)."""
    for path in folder.rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        for pattern, replacement in (GYM_IMPORT, GYM_FROM):
            text = pattern.sub(replacement, text)
        path.write_text(text, encoding="utf-8")
    for edit in edits:
        path = folder / edit.file
        text = path.read_text(encoding="utf-8")
        new = edit.new.replace("{xparl}", xparl or "")
        changed, count = re.subn(edit.pattern, lambda _, new=new: new, text, flags=re.M)
        if count == 0:
            raise EditError(f"edit of {edit.file} no longer applies: {edit.pattern!r}")
        path.write_text(changed, encoding="utf-8")


def verdict(program: Program, code: int | None, output: str, seconds: float) -> str:
    """What happened, in a few words: ran, ran until stopped, or the error it ended with."""
    if code == 0:
        return f"runs (exit 0, {seconds:.0f} s)"
    errors = ERROR_LINE.findall(output)
    last = errors[-1][0] if errors else ""
    if code is None and not errors:
        return f"runs (stopped at {seconds:.0f} s, no error)"
    if code is None:
        return "stuck after an error: " + _short(last)
    if "FileNotFoundError" in last and any(name in last for name in program.data_files):
        return "data not here: " + ", ".join(program.data_files) + " (its README downloads it)"
    missing = MISSING_MODULE.search(last)
    if missing and missing.group(1).split(".")[0] in program.env_modules:
        return f"env does not install ({missing.group(1)})"
    if program.backend == "torch" and (
        "UnknownAlgorithmError" in last or "no torch implementation of" in last
    ):
        return "torch algorithm missing: " + _short(last)
    return "fails: " + _short(last or output.strip().splitlines()[-1:][0] if output else "")


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_program(program: Program, folder: Path, timeout: float, xparl: str | None) -> str:
    """Edit the copy in ``folder``, run it until it exits or ``timeout`` s pass, say how it went."""
    try:
        apply_edits(folder, program.edits, xparl)
    except EditError as exc:
        return f"not run: {exc}"
    env = {**os.environ, "PARL_BACKEND": program.backend, "PYTHONUNBUFFERED": "1"}
    env.update({"MPLBACKEND": "Agg", "CUDA_VISIBLE_DEVICES": env.get("CUDA_VISIBLE_DEVICES", "")})
    log = folder / "port_fidelity.log"
    start = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, program.entry, *program.args],
            cwd=folder / program.cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            code: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            elapsed = time.monotonic() - start
            # What it printed by itself: the stop below makes it print KeyboardInterrupt.
            seen = log.stat().st_size
            _stop_group(proc)
    output = log.read_bytes()[:seen].decode(errors="replace")
    return verdict(program, code, output, elapsed)


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the program and every process it started (its own session), by its pid."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(5)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def xparl_cluster(cpu_num: int) -> Iterator[str]:
    """A cluster on 127.0.0.1 whose processes start without ``PARL_BACKEND``."""
    from parl.remote.cluster import LocalCluster

    saved = os.environ.pop("PARL_BACKEND", None)
    try:
        cluster = LocalCluster.start(cpu_num, host="127.0.0.1")
    finally:
        if saved is not None:
            os.environ["PARL_BACKEND"] = saved
    try:
        yield cluster.address
    finally:
        cluster.stop()


def table(rows: list[tuple[Program, str]]) -> str:
    lines = [
        f"PARL 2.2.1 programs ({PARL_COMMIT[:8]}) on this project",
        "",
        "| program | backend | edits (port + budget) | result |",
        "|---|---|---|---|",
    ]
    for program, result in rows:
        port = [e for e in program.edits if e.kind == "port"]
        budget = [e for e in program.edits if e.kind == "budget"]
        edits = f"{len(port)} + {len(budget)}"
        if port:
            edits += ": " + "; ".join(dict.fromkeys(e.reason for e in port))
        lines.append(f"| {program.name} | {program.backend} | {edits} | {result} |")
    runs = sum(result.startswith("runs") for _, result in rows)
    lines += ["", f"{runs} of {len(rows)} run."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--parl", type=Path, required=True, help="a PARL clone (work tree or git dir)"
    )
    parser.add_argument("--only", nargs="*", default=[], help="program folders to run")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per program")
    parser.add_argument("--keep", type=Path, default=None, help="keep the copies and logs here")
    args = parser.parse_args(argv)
    source = Source(args.parl)
    chosen = [p for p in PROGRAMS if not args.only or p.name in args.only]
    if args.only and len(chosen) != len(set(args.only)):
        known = sorted(p.name for p in PROGRAMS)
        raise SystemExit(f"--only names programs that are not listed; listed: {known}")
    work = Path(tempfile.mkdtemp(prefix="parl-port-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[Program, str]] = []
    needs_cluster = any(p.cluster for p in chosen)
    with xparl_cluster(4) if needs_cluster else _nothing() as xparl:
        for program in chosen:
            folder = work / program.name.replace("/", "__")
            source.copy(program.folder, folder)
            result = run_program(program, folder, args.timeout, xparl)
            print(f"{program.name} [{program.backend}]: {result}", flush=True)
            rows.append((program, result))
    print()
    print(table(rows))
    print(f"\ncopies and logs: {work}")


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    main()
