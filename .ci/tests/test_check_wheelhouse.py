"""The wheelhouse check passes a consistent set of distributions and names each defect."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

CI = Path(__file__).parent.parent
LICENSE = (CI.parent / "LICENSE").read_bytes()
TOGETHER = ["parl-core", "parl-utils", "parl-remote"]
FAMILIES = [
    "parl-algos-pg",
    "parl-algos-dqn",
    "parl-algos-impala",
    "parl-algos-ac",
    "parl-algos-es",
    "parl-algos-marl",
]


def requirements(name: str) -> list[str]:
    if name == "parl-core":
        return ["numpy>=1.24", "paddlepaddle>=3.0; extra == 'paddle'"]
    if name in TOGETHER:
        return ["parl-core==0.1.0"]
    return ["parl-core<1,>=0.1", "parl-utils<1,>=0.1"]


def write_wheelhouse(folder: Path, **changes: object) -> Path:
    """One wheel and one sdist per distribution, as a good build makes them, with ``changes``:
    ``requires={name: [...]}``, ``version={name: v}``, ``no_license=name``, ``owner=name``."""
    folder.mkdir()
    for name in TOGETHER + FAMILIES:
        stem = f"{name.replace('-', '_')}-{changes.get('version', {}).get(name, '0.1.0')}"
        meta = f"Metadata-Version: 2.4\nName: {name}\nVersion: {stem.split('-')[1]}\n"
        for requirement in changes.get("requires", {}).get(name, requirements(name)):
            meta += f"Requires-Dist: {requirement}\n"
        package = name.replace("-", "_") if name.startswith("parl-algos") else "parl"
        with zipfile.ZipFile(folder / f"{stem}-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"{stem}.dist-info/METADATA", meta)
            wheel.writestr(f"{package}/py.typed", "")
            if name in ("parl-core", changes.get("owner")):
                wheel.writestr("parl/__init__.py", "")
            if changes.get("no_license") != name:
                wheel.writestr(f"{stem}.dist-info/licenses/LICENSE", LICENSE)
        with tarfile.open(folder / f"{stem}.tar.gz", "w:gz") as sdist:
            info = tarfile.TarInfo(f"{stem}/LICENSE")
            info.size = len(LICENSE)
            sdist.addfile(info, io.BytesIO(LICENSE))
    return folder


def check(folder: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(CI / "check_wheelhouse.py"), str(folder)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_a_consistent_wheelhouse_passes(tmp_path: Path) -> None:
    result = check(write_wheelhouse(tmp_path / "wh"))
    assert result.returncode == 0, result.stderr
    assert f"{len(TOGETHER + FAMILIES)} distributions checked: ok" in result.stdout


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"requires": {"parl-algos-pg": ["parl-core[paddle]<1,>=0.1"]}}, "never a paddle build"),
        ({"requires": {"parl-algos-dqn": ["paddlepaddle>=3"]}}, "never a paddle build"),
        ({"requires": {"parl-utils": ["parl-core>=0.1"]}}, "the pin must be ==0.1.0"),
        ({"requires": {"parl-algos-ac": ["parl-core==0.1.0"]}}, "the pin must be <1,>=0.1"),
        ({"version": {"parl-remote": "0.1.1"}}, "released with parl-core, so it must be 0.1.0"),
        ({"no_license": "parl-algos-impala"}, "its LICENSE is missing"),
        ({"owner": "parl-utils"}, "only parl-core may"),
    ],
)
def test_each_defect_is_named(tmp_path: Path, changes: dict[str, object], message: str) -> None:
    result = check(write_wheelhouse(tmp_path / "wh", **changes))
    assert result.returncode == 1
    assert message in result.stderr, result.stderr


def test_a_missing_distribution_is_named(tmp_path: Path) -> None:
    folder = write_wheelhouse(tmp_path / "wh")
    next(folder.glob("parl_algos_dqn-*.tar.gz")).unlink()
    result = check(folder)
    assert "parl-algos-dqn: no sdist" in result.stderr
