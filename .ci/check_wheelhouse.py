"""Check the built distributions as a release needs them, before anything installs them.

For every distribution of the workspace there must be one wheel and one sdist, each carrying the
repository's LICENSE unchanged; only parl-core's wheel may ship ``parl/__init__.py`` (the other
``parl`` portions are namespace packages) and every wheel has a ``py.typed`` marker; the versions
follow DESIGN §1: parl-core, parl-utils and parl-remote share one version and pin each other
exactly, every other distribution needs ``parl-core>=X.Y,<X+1``; and none requires a paddle build
by name (only parl-core's ``[paddle]`` extra does), so that paddle's GPU build serves.

Usage (``nox -s wheelhouse`` and ``nox -s packaging`` run it):
``python .ci/check_wheelhouse.py DIR``.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).parent.parent
MEMBERS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]["members"]
NAMESPACE_OWNER = "parl-core"
RELEASED_TOGETHER = {"parl-core", "parl-utils", "parl-remote"}
PADDLE = {"paddlepaddle", "paddlepaddle-gpu"}


def check(wheelhouse: Path) -> list[str]:
    """Every problem of the wheelhouse's distributions, as lines to print."""
    wheels = {str(parse_wheel_filename(w.name)[0]): w for w in wheelhouse.glob("*.whl")}
    sdists = {str(parse_sdist_filename(s.name)[0]): s for s in wheelhouse.glob("*.tar.gz")}
    problems = [
        f"{name}: no {kind} in {wheelhouse}"
        for name in MEMBERS
        for kind, built in (("wheel", wheels), ("sdist", sdists))
        if name not in built
    ]
    metadata = {name: read_metadata(wheel) for name, wheel in wheels.items()}
    for name, wheel in wheels.items():
        problems += check_wheel_files(name, wheel)
    for name, sdist in sdists.items():
        problems += check_sdist_license(name, sdist)
    if NAMESPACE_OWNER in metadata:
        problems += check_versions(metadata)
    return problems


def read_metadata(wheel: Path) -> tuple[Version, list[Requirement]]:
    """The version and the requirements a wheel declares."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        fields = Parser().parsestr(archive.read(name).decode())
    return Version(fields["Version"]), [Requirement(r) for r in fields.get_all("Requires-Dist", [])]


def check_wheel_files(name: str, wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        files = archive.namelist()
        licenses = [n for n in files if n.endswith(".dist-info/licenses/LICENSE")]
        license_text = archive.read(licenses[0]) if licenses else None
    problems = []
    owns = {"parl/__init__.py", "parl/algorithms/__init__.py"} & set(files)
    if owns and name != NAMESPACE_OWNER:
        problems.append(f"{wheel.name} ships {sorted(owns)}: only {NAMESPACE_OWNER} may")
    if not any(f.endswith("py.typed") for f in files):
        problems.append(f"{wheel.name} has no py.typed marker")
    if license_text != (ROOT / "LICENSE").read_bytes():
        problems.append(f"{wheel.name}: its LICENSE is missing or not the repository's")
    return problems


def check_sdist_license(name: str, sdist: Path) -> list[str]:
    with tarfile.open(sdist) as archive:
        top = sdist.name.removesuffix(".tar.gz")
        try:
            member = archive.extractfile(f"{top}/LICENSE")
        except KeyError:
            member = None
        text = member.read() if member else None
    if text != (ROOT / "LICENSE").read_bytes():
        return [
            f"{sdist.name}: its LICENSE is missing or not the repository's (copy it into {name}/)"
        ]
    return []


def check_versions(metadata: dict[str, tuple[Version, list[Requirement]]]) -> list[str]:
    """The pins of DESIGN §1, and no paddle build required by name."""
    core = metadata[NAMESPACE_OWNER][0]
    plugin_range = f"<{core.major + 1},>={core.major}.{core.minor}"
    problems = []
    for name, (version, requirements) in sorted(metadata.items()):
        together = name in RELEASED_TOGETHER
        if together and version != core:
            problems.append(f"{name} {version}: released with parl-core, so it must be {core}")
        for requirement in requirements:
            required = canonicalize_name(requirement.name)
            extra_only = requirement.marker is not None and "extra" in str(requirement.marker)
            by_name = required in PADDLE or "paddle" in requirement.extras
            if by_name and not (name == NAMESPACE_OWNER and extra_only):
                problems.append(
                    f"{name} requires {requirement}: require an importable paddle through "
                    "parl-core (its error names both builds), never a paddle build by name"
                )
            if required in RELEASED_TOGETHER and not extra_only:
                wanted = f"=={core}" if together else plugin_range
                if str(requirement.specifier) != wanted:
                    problems.append(f"{name} requires {requirement}: the pin must be {wanted}")
    return problems


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__.rsplit("Usage", 1)[1])
    problems = check(Path(sys.argv[1]))
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    print(f"{len(MEMBERS)} distributions checked: {'FAILED' if problems else 'ok'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
